/* global document, window, EventSource, uPlot */
// The microbatch dashboard: reads GET /dashboard/events (one JSON tick a second, see
// src/http/dashboard/feed.ts) and draws each served model. Plain browser JavaScript, no build step.
'use strict';
(function () {
  var KEEP = 300; // points per series: five minutes at one tick a second
  var REFUSALS = ['queue-full', 'timeout', 'shed', 'aborted', 'stopped', 'error'];
  var REASONS = ['full', 'timer', 'idle', 'deadline', 'drain', 'warmup'];
  var COLORS = ['#1565c0', '#c62828', '#2e7d32', '#ef6c00', '#6a1b9a', '#00838f', '#5d4037'];
  var cards = new Map();
  var status = document.getElementById('status');
  var updated = document.getElementById('updated');
  var main = document.getElementById('models');
  var empty = document.getElementById('empty');
  var connects = 0;

  function el(tag, attrs, text) {
    var e = document.createElement(tag);
    for (var k in attrs) e.setAttribute(k, attrs[k]);
    if (text !== undefined) e.textContent = text;
    return e;
  }

  function tile(parent, label, field) {
    var t = el('div', { class: 'tile' });
    t.appendChild(el('span', { class: 'label' }, label));
    var v = el('span', { class: 'value', 'data-field': field }, '0');
    t.appendChild(v);
    parent.appendChild(t);
    return v;
  }

  function panel(parent, title) {
    var p = el('div', { class: 'panel' });
    p.appendChild(el('h3', {}, title));
    parent.appendChild(p);
    return p;
  }

  function width(p) {
    return Math.max(300, p.clientWidth - 16);
  }

  /** A time chart over the last KEEP ticks: one line per label. */
  function timeChart(p, labels, unit) {
    var series = [{}];
    labels.forEach(function (label, i) {
      series.push({ label: label, stroke: COLORS[i % COLORS.length], width: 1.5, spanGaps: false, value: function (_u, v) { return v === null || v === undefined ? '–' : fmt(v) + unit; } });
    });
    var data = [[]].concat(labels.map(function () { return []; }));
    var u = new uPlot({ width: width(p), height: 170, series: series, scales: { x: { time: true } }, axes: [{}, { size: 50 }], legend: { live: true } }, data, p);
    return {
      push: function (t, values) {
        data[0].push(t);
        values.forEach(function (v, i) { data[i + 1].push(v); });
        if (data[0].length > KEEP) data.forEach(function (s) { s.shift(); });
        u.setData(data);
      },
      resize: function () { u.setSize({ width: width(p), height: 170 }); },
    };
  }

  /** The batch-size histogram: a bar per size that ran, and the same counts as a table. */
  function histogram(p) {
    var data = [[], []];
    var u = new uPlot(
      {
        width: width(p),
        height: 170,
        scales: { x: { time: false, range: function (_u, min, max) { return [min - 0.5, max + 0.5]; } } },
        series: [{ label: 'rows' }, { label: 'batches', stroke: COLORS[0], fill: 'rgba(21,101,192,0.35)', paths: uPlot.paths.bars({ size: [0.8, 48] }), points: { show: false } }],
        axes: [{}, { size: 50 }],
      },
      data,
      p,
    );
    var wrap = el('div', { class: 'scroll' });
    var table = el('table', { 'data-field': 'batch-sizes' });
    wrap.appendChild(table);
    p.appendChild(wrap);
    return {
      set: function (pairs) {
        u.setData([pairs.map(function (b) { return b[0]; }), pairs.map(function (b) { return b[1]; })]);
        // One column per size that ran: the exact counts behind the bars.
        table.textContent = '';
        var sizes = el('tr');
        var counts = el('tr');
        sizes.appendChild(el('th', {}, 'rows'));
        counts.appendChild(el('th', {}, 'batches'));
        pairs.forEach(function (b) {
          sizes.appendChild(el('th', {}, String(b[0])));
          counts.appendChild(el('td', { 'data-size': String(b[0]) }, String(b[1])));
        });
        table.appendChild(sizes);
        table.appendChild(counts);
      },
      resize: function () { u.setSize({ width: width(p), height: 170 }); },
    };
  }

  function fmt(v) {
    if (Math.abs(v) >= 100 || Number.isInteger(v)) return String(Math.round(v));
    return v.toFixed(Math.abs(v) >= 10 ? 1 : 2);
  }

  function sum(counts) {
    var n = 0;
    for (var k in counts) n += counts[k];
    return n;
  }

  function card(m) {
    var c = cards.get(m.name);
    if (c !== undefined && c.kind === m.kind) return c;
    if (c !== undefined) c.root.remove();
    var root = el('section', { class: 'model', 'data-model': m.name });
    var h = el('h2');
    h.appendChild(el('span', { 'data-field': 'name' }, m.name));
    var meta = el('span', { class: 'meta', 'data-field': 'meta' });
    h.appendChild(meta);
    root.appendChild(h);
    var tiles = el('div', { class: 'tiles' });
    root.appendChild(tiles);
    var charts = el('div', { class: 'charts' });
    root.appendChild(charts);
    main.appendChild(root);
    c = { kind: m.kind, root: root, meta: meta, prev: null, refused: {}, charts: [] };
    if (m.kind === 'generator') {
      c.v = { tokens: tile(tiles, 'tokens', 'tokens'), rate: tile(tiles, 'tokens/s', 'tokens-per-second'), running: tile(tiles, 'running sequences', 'running'), queued: tile(tiles, 'waiting', 'queued') };
      c.tokens = timeChart(panel(charts, 'tokens/s'), ['tokens/s'], '');
      c.seqs = timeChart(panel(charts, 'sequences'), ['running', 'waiting'], '');
      c.ttft = timeChart(panel(charts, 'time to first token (ms)'), ['p50', 'p99'], ' ms');
      c.charts.push(c.tokens, c.seqs, c.ttft);
    } else {
      c.v = {
        requests: tile(tiles, 'requests', 'requests'),
        rate: tile(tiles, 'requests/s', 'requests-per-second'),
        queued: tile(tiles, 'queue depth', 'queued'),
        runningBatches: tile(tiles, 'running batches', 'running-batches'),
        batches: tile(tiles, 'batches', 'batches'),
        mean: tile(tiles, 'mean batch size', 'mean-batch-size'),
      };
      c.throughput = timeChart(panel(charts, 'requests/s'), ['answered', 'refused'], '/s');
      c.queue = timeChart(panel(charts, 'queue depth and running batches'), ['queued', 'running batches'], '');
      c.latency = timeChart(panel(charts, 'latency (ms): queue wait per request, run time per batch'), ['queue p50', 'queue p99', 'run p50', 'run p99'], ' ms');
      c.hist = histogram(panel(charts, 'batch size (rows per batch, since the server started)'));
      c.reasons = timeChart(panel(charts, 'batches/s by release reason'), REASONS, '/s');
      var refusals = panel(charts, 'refusals/s by cause');
      c.refusals = timeChart(refusals, REFUSALS, '/s');
      c.refusedTable = el('table', { 'data-field': 'refusals' });
      refusals.appendChild(c.refusedTable);
      c.charts.push(c.throughput, c.queue, c.latency, c.hist, c.reasons, c.refusals);
    }
    cards.set(m.name, c);
    return c;
  }

  function refusedTable(c, m) {
    var t = c.refusedTable;
    t.textContent = '';
    var head = el('tr');
    ['', 'since page opened', 'by the host, since it started'].forEach(function (s) { head.appendChild(el('th', {}, s)); });
    t.appendChild(head);
    var host = m.rejected || {};
    var hostTotals = { 'queue-full': host.queueFull, timeout: host.deadline, aborted: host.aborted, stopped: host.stopped, error: host.error };
    REFUSALS.forEach(function (o) {
      var tr = el('tr', { 'data-cause': o });
      tr.appendChild(el('th', {}, o));
      tr.appendChild(el('td', {}, String(c.refused[o] || 0)));
      var total = hostTotals[o];
      tr.appendChild(el('td', {}, o === 'shed' ? '(in timeout)' : total === undefined ? '–' : String(total)));
      t.appendChild(tr);
    });
  }

  function show(m, t) {
    var c = card(m);
    var dt = c.prev === null ? 1 : Math.max(0.001, (t - c.prev.t) / 1000);
    var w = m.window;
    var x = t / 1000;
    c.meta.textContent = m.kind + (m.version === null ? '' : ' · version ' + m.version) + ' · ' + m.state + (m.maxBatchSize === null ? '' : ' · maxBatchSize ' + m.maxBatchSize);
    c.v.queued.textContent = String(m.queued);
    if (m.kind === 'generator') {
      var made = c.prev === null || m.tokens === null || c.prev.tokens === null ? 0 : Math.max(0, m.tokens - c.prev.tokens);
      c.v.tokens.textContent = m.tokens === null ? '–' : String(m.tokens);
      c.v.rate.textContent = fmt(made / dt);
      c.v.running.textContent = String(m.running);
      c.tokens.push(x, [made / dt]);
      c.seqs.push(x, [m.running, m.queued]);
      c.ttft.push(x, w.ttftMs === null ? [null, null] : w.ttftMs);
    } else {
      var settled = sum(w.outcomes);
      var answered = w.outcomes.ok || 0;
      var batches = 0;
      var rows = 0;
      m.batchSizes.forEach(function (b) { batches += b[1]; rows += b[0] * b[1]; });
      c.v.requests.textContent = String(m.requests);
      c.v.rate.textContent = fmt(settled / dt);
      c.v.runningBatches.textContent = String(m.runningBatches);
      c.v.batches.textContent = String(batches);
      c.v.mean.textContent = batches === 0 ? '–' : fmt(rows / batches);
      c.throughput.push(x, [answered / dt, (settled - answered) / dt]);
      c.queue.push(x, [m.queued, m.runningBatches]);
      var q = w.queueMs || [null, null];
      var r = w.runMs || [null, null];
      c.latency.push(x, [q[0], q[1], r[0], r[1]]);
      c.hist.set(m.batchSizes);
      c.reasons.push(x, REASONS.map(function (k) { return (w.reasons[k] || 0) / dt; }));
      c.refusals.push(x, REFUSALS.map(function (k) { return (w.outcomes[k] || 0) / dt; }));
      REFUSALS.forEach(function (k) { c.refused[k] = (c.refused[k] || 0) + (w.outcomes[k] || 0); });
      refusedTable(c, m);
    }
    c.prev = { t: t, tokens: m.tokens };
  }

  function onTick(tick) {
    var seen = new Set();
    tick.models.forEach(function (m) {
      seen.add(m.name);
      show(m, tick.t);
    });
    cards.forEach(function (c, name) {
      if (!seen.has(name)) {
        c.root.remove();
        cards.delete(name);
      }
    });
    empty.hidden = tick.models.length > 0;
    updated.textContent = 'updated ' + new Date(tick.t).toLocaleTimeString();
    document.body.setAttribute('data-ticks', String(Number(document.body.getAttribute('data-ticks') || 0) + 1));
  }

  function setStatus(state, text) {
    status.setAttribute('data-state', state);
    status.textContent = text;
  }

  // EventSource reconnects by itself (the server asks for 1 s) while the server is away; it gives
  // up only on an answer that is no event stream, so then a fresh one is made a little later.
  function connect() {
    var es = new EventSource('events');
    es.onopen = function () {
      connects++;
      status.setAttribute('data-connects', String(connects));
      setStatus('live', 'live');
    };
    es.onmessage = function (e) {
      onTick(JSON.parse(e.data));
    };
    es.onerror = function () {
      setStatus('reconnecting', 'reconnecting…');
      if (es.readyState === EventSource.CLOSED) window.setTimeout(connect, 2000);
    };
  }

  window.addEventListener('resize', function () {
    cards.forEach(function (c) { c.charts.forEach(function (ch) { ch.resize(); }); });
  });
  connect();
})();
