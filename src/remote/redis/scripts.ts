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
 * Takes over entries idle past a limit (their replica died or stalled): KEYS = [requests]; ARGV =
 * [group, consumer, min idle ms, count]. Returns `{ {id, fields, deliveries}... }`, the ids that
 * were deleted meanwhile, and the server's TIME.
 */
export const CLAIM: RedisScript = {
  name: 'claim',
  source: `
local r = redis.call('XAUTOCLAIM', KEYS[1], ARGV[1], ARGV[2], ARGV[3], '0-0', 'COUNT', ARGV[4])
local out = {}
for _, e in ipairs(r[2]) do
  local p = redis.call('XPENDING', KEYS[1], ARGV[1], e[1], e[1], 1)
  local n = 0
  if #p > 0 then n = p[1][4] end
  out[#out + 1] = { e[1], e[2], n }
end
return { out, r[3] or {}, redis.call('TIME') }
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
