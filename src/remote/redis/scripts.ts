/**
 * The Lua scripts that make each multi-step change atomic on the Redis server. Each one checks that
 * an entry is still owned by the calling replica before it acts on it: once another replica has
 * claimed an entry (its owner stalled or died), the old owner can neither answer nor renew it, so
 * every caller gets exactly one answer.
 * @internal
 */
export interface RedisScript {
  readonly name: string;
  readonly source: string;
}

/** Owner check shared by the scripts: is entry `id` pending for `consumer` in `group`? */
const OWNED = `
local function owned(stream, group, consumer, id)
  local p = redis.call('XPENDING', stream, group, id, id, 1)
  return #p > 0 and p[1][2] == consumer
end
`;

/**
 * Answers and retires entries, a batch's worth in one call: KEYS = [requests, reply streams...];
 * ARGV = [group, consumer, reply ttl ms, n, then n × (id, index of its reply stream in KEYS,
 * request id, payload)]. An empty request id retires the entry without an answer (expired, or
 * unanswerable). Returns one flag per entry: 1 answered, 0 not ours anymore (taken over).
 */
export const REPLY: RedisScript = {
  name: 'reply',
  source: `${OWNED}
local group, consumer, ttl, n = ARGV[1], ARGV[2], ARGV[3], tonumber(ARGV[4])
local done, touched = {}, {}
for i = 0, n - 1 do
  local at = 5 + i * 4
  local id, key, rid = ARGV[at], tonumber(ARGV[at + 1]), ARGV[at + 2]
  if owned(KEYS[1], group, consumer, id) then
    if rid ~= '' then
      redis.call('XADD', KEYS[key], '*', 'r', rid, 'm', ARGV[at + 3])
      touched[key] = true
    end
    redis.call('XACK', KEYS[1], group, id)
    redis.call('XDEL', KEYS[1], id)
    done[#done + 1] = 1
  else
    done[#done + 1] = 0
  end
end
for key in pairs(touched) do redis.call('PEXPIRE', KEYS[key], ttl) end
return done
`,
};

/**
 * Keeps a running batch's entries from being reclaimed: KEYS = [requests]; ARGV = [group, consumer,
 * ids...]. Resets the idle time of each entry still ours (XCLAIM ... JUSTID does not count a
 * delivery); returns the ids that are not ours anymore.
 */
export const RENEW: RedisScript = {
  name: 'renew',
  source: `${OWNED}
local lost = {}
for i = 3, #ARGV do
  if owned(KEYS[1], ARGV[1], ARGV[2], ARGV[i]) then
    redis.call('XCLAIM', KEYS[1], ARGV[1], ARGV[2], 0, ARGV[i], 'JUSTID')
  else
    lost[#lost + 1] = ARGV[i]
  end
end
return lost
`,
};

/**
 * Takes over the work of replicas that died or stalled, and clears what they leave behind:
 * KEYS = [requests, replicas]; ARGV = [group, consumer, min idle ms, heartbeat ttl ms, want (0 or
 * 1), scan]. A consumer is dead when its heartbeat (its score in `replicas`, the server's clock) is
 * older than the ttl or gone; a living one is never touched by that rule. Of a dead consumer's
 * pending entries (and, as the last resort, of any other consumer's entries idle past min idle):
 * an entry whose caller is gone (deleted by its front end, or past its deadline) is acknowledged
 * and deleted; up to `want` of the others are claimed for this replica. A dead consumer left with
 * nothing pending is removed from the group and from `replicas`. Returns `{ {id, fields,
 * deliveries}... }`, one `{ from, reason, cleared, removed, ids... }` per consumer acted on, and the
 * server's time in ms.
 */
export const TAKEOVER: RedisScript = {
  name: 'takeover',
  source: `
local stream, replicas = KEYS[1], KEYS[2]
local group, me, idle, ttl = ARGV[1], ARGV[2], ARGV[3], tonumber(ARGV[4])
local want, scan = tonumber(ARGV[5]), ARGV[6]
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local claimed, events, byFrom = {}, {}, {}
local function event(from, reason)
  local e = byFrom[from]
  if e == nil then
    e = { from, reason, 0, 0 }
    byFrom[from] = e
    events[#events + 1] = e
  end
  return e
end
local function expired(id, fields)
  for i = 1, #fields - 1, 2 do
    if fields[i] == 't' then
      local ms = tonumber(fields[i + 1])
      if ms == nil then return false end
      return tonumber(string.sub(id, 1, string.find(id, '-', 1, true) - 1)) + ms <= now
    end
  end
  return false
end
local function sweep(pending, reason)
  for _, p in ipairs(pending) do
    local id, from = p[1], p[2]
    if from ~= me then
      local found = redis.call('XRANGE', stream, id, id)
      if #found == 0 then
        redis.call('XACK', stream, group, id)
        local e = event(from, reason)
        e[3] = e[3] + 1
      elseif expired(id, found[1][2]) then
        redis.call('XACK', stream, group, id)
        redis.call('XDEL', stream, id)
        local e = event(from, reason)
        e[3] = e[3] + 1
      elseif #claimed < want then
        local c = redis.call('XCLAIM', stream, group, me, 0, id)
        if #c > 0 then
          claimed[#claimed + 1] = { id, c[1][2], p[4] + 1 }
          local e = event(from, reason)
          e[#e + 1] = id
        end
      end
    end
  end
end
local ok, consumers = pcall(redis.call, 'XINFO', 'CONSUMERS', stream, group)
if not ok then consumers = {} end
for _, c in ipairs(consumers) do
  local name, pending = nil, 0
  for i = 1, #c - 1, 2 do
    if c[i] == 'name' then name = c[i + 1] elseif c[i] == 'pending' then pending = tonumber(c[i + 1]) end
  end
  if name ~= nil and name ~= me then
    local beat = redis.call('ZSCORE', replicas, name)
    if not beat or now - tonumber(beat) > ttl then
      if pending > 0 then sweep(redis.call('XPENDING', stream, group, '-', '+', scan, name), 'heartbeat') end
      if #redis.call('XPENDING', stream, group, '-', '+', 1, name) == 0 then
        redis.call('XGROUP', 'DELCONSUMER', stream, group, name)
        redis.call('ZREM', replicas, name)
        event(name, 'heartbeat')[4] = 1
      end
    end
  end
end
if #claimed < want and #consumers > 0 then
  sweep(redis.call('XPENDING', stream, group, 'IDLE', idle, '-', '+', scan), 'idle')
end
return { claimed, events, now }
`,
};

/**
 * A replica's heartbeat: KEYS = [replicas]; ARGV = [replica id, keep ms]. Scores the replica with
 * the server's clock, forgets replicas silent for longer than `keep`, and lets the key expire when
 * every replica is gone. Returns the server time in ms.
 */
export const HEARTBEAT: RedisScript = {
  name: 'heartbeat',
  source: `
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
redis.call('ZADD', KEYS[1], now, ARGV[1])
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now - tonumber(ARGV[2]))
redis.call('PEXPIRE', KEYS[1], ARGV[2])
return now
`,
};

/** Replicas seen within a window: KEYS = [replicas]; ARGV = [window ms]. Judged by the server's clock. */
export const ALIVE: RedisScript = {
  name: 'alive',
  source: `
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
return redis.call('ZCOUNT', KEYS[1], now - tonumber(ARGV[1]), '+inf')
`,
};

/**
 * A replica leaves: KEYS = [requests, replicas]; ARGV = [group, consumer]. Removes it from the
 * replica set, and from the group only when it holds no pending entry (deleting a consumer drops
 * its pending entries, which another replica must still be able to claim).
 */
export const LEAVE: RedisScript = {
  name: 'leave',
  source: `
redis.call('ZREM', KEYS[2], ARGV[2])
local ok, summary = pcall(redis.call, 'XPENDING', KEYS[1], ARGV[1], '-', '+', 1, ARGV[2])
if ok and #summary == 0 then pcall(redis.call, 'XGROUP', 'DELCONSUMER', KEYS[1], ARGV[1], ARGV[2]) end
return 1
`,
};
