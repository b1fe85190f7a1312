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

done = function(summary, latency, requests)
  local e = summary.errors
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
