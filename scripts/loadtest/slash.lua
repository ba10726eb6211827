-- slash.lua: a wrk script that sends signed `/gpu status` slash commands
-- to gpuwatch, as Slack would, to measure the handler's latency.
--
--   SLACK_SIGNING_SECRET=... wrk -t2 -c10 -d30s --latency \
--       -s scripts/loadtest/slash.lua http://127.0.0.1:9477 -- 200 10
--
-- The optional arguments after "--" limit the rate: requests per second
-- in all, and the number of connections given to -c (wrk does not tell
-- the script). Without them wrk sends as fast as it can.
--
-- Environment: SLACK_SIGNING_SECRET (required), SLASH_TEXT (the text
-- after /gpu, default "status").
--
-- Slack signs "v0:" .. timestamp .. ":" .. body with HMAC-SHA256. wrk's
-- Lua (LuaJIT) has no HMAC, so SHA-256 and HMAC are implemented below
-- with LuaJIT's bit library; the signature is computed once a second, as
-- the timestamp changes. init checks the code against Slack's published
-- example and stops if it does not reproduce it.

local bit = require("bit")
local band, bor, bxor, bnot = bit.band, bit.bor, bit.bxor, bit.bnot
local lshift, rshift, ror, tobit = bit.lshift, bit.rshift, bit.ror, bit.tobit

local K = {
  0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5,
  0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174,
  0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
  0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967,
  0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85,
  0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
  0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
  0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2,
}

-- be32 writes a 32-bit number as 4 big-endian bytes.
local function be32(x)
  return string.char(band(rshift(x, 24), 255), band(rshift(x, 16), 255), band(rshift(x, 8), 255), band(x, 255))
end

-- sha256 returns the 32-byte SHA-256 digest of msg (FIPS 180-4).
local function sha256(msg)
  local len = #msg
  local bits = len * 8
  msg = msg .. "\128" .. string.rep("\0", (55 - len) % 64)
    .. be32(math.floor(bits / 4294967296)) .. be32(bits % 4294967296)
  local H = { 0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a, 0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19 }
  local w = {}
  for chunk = 1, #msg, 64 do
    for i = 0, 15 do
      local b1, b2, b3, b4 = msg:byte(chunk + 4 * i, chunk + 4 * i + 3)
      w[i] = bor(lshift(b1, 24), lshift(b2, 16), lshift(b3, 8), b4)
    end
    for i = 16, 63 do
      local x, y = w[i - 15], w[i - 2]
      local s0 = bxor(ror(x, 7), ror(x, 18), rshift(x, 3))
      local s1 = bxor(ror(y, 17), ror(y, 19), rshift(y, 10))
      w[i] = tobit(w[i - 16] + s0 + w[i - 7] + s1)
    end
    local a, b, c, d, e, f, g, h = H[1], H[2], H[3], H[4], H[5], H[6], H[7], H[8]
    for i = 0, 63 do
      local S1 = bxor(ror(e, 6), ror(e, 11), ror(e, 25))
      local ch = bxor(band(e, f), band(bnot(e), g))
      local t1 = tobit(h + S1 + ch + K[i + 1] + w[i])
      local S0 = bxor(ror(a, 2), ror(a, 13), ror(a, 22))
      local maj = bxor(band(a, b), band(a, c), band(b, c))
      local t2 = tobit(S0 + maj)
      h, g, f, e, d, c, b, a = g, f, e, tobit(d + t1), c, b, a, tobit(t1 + t2)
    end
    H[1], H[2], H[3], H[4] = tobit(H[1] + a), tobit(H[2] + b), tobit(H[3] + c), tobit(H[4] + d)
    H[5], H[6], H[7], H[8] = tobit(H[5] + e), tobit(H[6] + f), tobit(H[7] + g), tobit(H[8] + h)
  end
  local out = {}
  for i = 1, 8 do out[i] = be32(H[i]) end
  return table.concat(out)
end

-- hmac_sha256 returns the 32-byte HMAC-SHA256 of msg under key (RFC 2104).
local function hmac_sha256(key, msg)
  if #key > 64 then key = sha256(key) end
  key = key .. string.rep("\0", 64 - #key)
  local ipad, opad = {}, {}
  for i = 1, 64 do
    local k = key:byte(i)
    ipad[i] = string.char(bxor(k, 0x36))
    opad[i] = string.char(bxor(k, 0x5c))
  end
  return sha256(table.concat(opad) .. sha256(table.concat(ipad) .. msg))
end

local function hex(s)
  return (s:gsub(".", function(c) return string.format("%02x", c:byte()) end))
end

-- slack_signature is the X-Slack-Signature of body sent at ts.
local function slack_signature(secret, ts, body)
  return "v0=" .. hex(hmac_sha256(secret, "v0:" .. ts .. ":" .. body))
end

local function urlencode(s)
  return (s:gsub("[^%w%-%._~]", function(c) return string.format("%%%02X", c:byte()) end))
end

-- Per-thread state: wrk runs this file once per thread.
secret = os.getenv("SLACK_SIGNING_SECRET")
body = "team_id=T0LOAD&team_domain=load&channel_id=C0LOAD&channel_name=gpu&user_id=U0LOAD&user_name=loadtest"
  .. "&command=%2Fgpu&text=" .. urlencode(os.getenv("SLASH_TEXT") or "status")
  .. "&response_url=https%3A%2F%2Fhooks.slack.com%2Fcommands%2FT0LOAD%2F1%2Fx&trigger_id=1.2.3"
signed_at, signature = nil, nil
interval_ms = 0
bad = 0

function init(args)
  local example = slack_signature("8f742231b10e8888abcd99yyyzzz85a5", "1531420618",
    "token=xyzz0WbapA4vBCDEFasx0q6G&team_id=T1DC2JH3J&team_domain=testteamnow&channel_id=G8PSS9T3V&channel_name=foobar&user_id=U2CERLKJA&user_name=roadrunner&command=%2Fwebhook-collect&text=&response_url=https%3A%2F%2Fhooks.slack.com%2Fcommands%2FT1DC2JH3J%2F397700885554%2F96rGlfmibIGlgcZRskXaIFfN&trigger_id=398738663015.47445629121.803a0bc887a14d10d2c447fce8b6703c")
  if example ~= "v0=a2114d57b48eac39b9ad189dd8316235a7b4a8d21a10bd27519666489c69b503" then
    error("slash.lua: HMAC-SHA256 does not reproduce Slack's example (got " .. example .. ")")
  end
  if secret == nil or secret == "" then
    error("slash.lua: set SLACK_SIGNING_SECRET to gpuwatch's slack.signing_secret")
  end
  local rate, conns = tonumber(args[1]), tonumber(args[2])
  if rate and rate > 0 then
    -- Each connection waits this long before its next request, so the
    -- connections together send about rate requests a second.
    interval_ms = math.floor((conns or 1) * 1000 / rate)
  end
end

function delay()
  return interval_ms
end

function request()
  local now = os.time()
  if now ~= signed_at then
    signed_at, signature = now, slack_signature(secret, tostring(now), body)
  end
  return wrk.format("POST", "/slack/commands", {
    ["Content-Type"] = "application/x-www-form-urlencoded",
    ["X-Slack-Request-Timestamp"] = tostring(now),
    ["X-Slack-Signature"] = signature,
  }, body)
end

function response(status, headers, body)
  if status ~= 200 then bad = bad + 1 end
end

threads = {}

function setup(thread)
  table.insert(threads, thread)
end

function done(summary, latency, requests)
  local refused = 0
  for _, t in ipairs(threads) do refused = refused + (t:get("bad") or 0) end
  io.write(string.format("slash.lua: %d requests, %d not 200 (401: check the secret and the clock; 404: is the Slack app served there?)\n",
    summary.requests, refused))
  io.write(string.format("slash.lua: latency p50 %.2f ms, p99 %.2f ms, max %.2f ms\n",
    latency:percentile(50) / 1000, latency:percentile(99) / 1000, latency.max / 1000))
end
