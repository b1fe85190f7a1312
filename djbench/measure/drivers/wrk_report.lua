-- djbench's wrk script: sets the request from the environment and prints totals and
-- percentiles as one machine-readable line when wrk is done.
local method = os.getenv("DJBENCH_METHOD")
if method and method ~= "" then wrk.method = method end
local body = os.getenv("DJBENCH_BODY")
if body and body ~= "" then wrk.body = body end
local content_type = os.getenv("DJBENCH_CONTENT_TYPE")
if content_type and content_type ~= "" then wrk.headers["Content-Type"] = content_type end
local headers = os.getenv("DJBENCH_HEADERS")
if headers and headers ~= "" then
  for line in headers:gmatch("[^\n]+") do
    local name, value = line:match("^([^:]+):%s*(.*)$")
    if name then wrk.headers[name] = value end
  end
end
-- Cycle over several paths (ids, slugs): each wrk thread runs its own copy of this
-- script, so each thread cycles through the list from its own start.
local paths = {}
local listed = os.getenv("DJBENCH_PATHS")
if listed and listed ~= "" then
  for path in listed:gmatch("[^\n]+") do paths[#paths + 1] = path end
end
if #paths > 0 then
  local i = 0
  request = function()
    i = i % #paths + 1
    return wrk.format(nil, paths[i])
  end
end

-- One meaning of "error" for every driver: a response whose status is not the
-- scenario's expected one (DJBENCH_EXPECT_STATUS; unset: any 2xx is correct). wrk's own
-- "status" count only sees statuses above 399, so each thread counts by status here
-- (globals, so that done() can read them with thread:get; costs about 1% of wrk's
-- ceiling against a static 200, measured).
local expect_status = tonumber(os.getenv("DJBENCH_EXPECT_STATUS") or "")
statuses = {}
unexpected = 0
response = function(status, headers, body)
  statuses[status] = (statuses[status] or 0) + 1
  if expect_status then
    if status ~= expect_status then unexpected = unexpected + 1 end
  elseif status < 200 or status > 299 then
    unexpected = unexpected + 1
  end
end

local threads = {}
setup = function(thread)
  threads[#threads + 1] = thread
end

done = function(summary, latency, requests)
  local e = summary.errors
  local total_unexpected = 0
  local by_status = {}
  for _, thread in ipairs(threads) do
    total_unexpected = total_unexpected + thread:get("unexpected")
    for status, count in pairs(thread:get("statuses")) do
      by_status[status] = (by_status[status] or 0) + count
    end
  end
  local parts = {}
  for status, count in pairs(by_status) do
    parts[#parts + 1] = string.format("\"%d\":%d", status, count)
  end
  io.write(string.format(
    "DJBENCH-WRK-STATUS {\"unexpected\":%d,\"status\":{%s}}\n",
    total_unexpected, table.concat(parts, ",")))
  io.write(string.format(
    "DJBENCH-WRK {\"requests\":%d,\"duration_us\":%d,\"bytes\":%d," ..
    "\"errors\":{\"connect\":%d,\"read\":%d,\"write\":%d,\"timeout\":%d,\"status\":%d}," ..
    "\"latency_us\":{\"min\":%d,\"mean\":%.3f,\"max\":%d,\"stdev\":%.3f," ..
    "\"p50\":%d,\"p90\":%d,\"p99\":%d,\"p999\":%d}}\n",
    summary.requests, summary.duration, summary.bytes,
    e.connect, e.read, e.write, e.timeout, e.status,
    latency.min, latency.mean, latency.max, latency.stdev,
    latency:percentile(50), latency:percentile(90), latency:percentile(99),
    latency:percentile(99.9)))
end
