-- A stored procedure of known cost, for --find-max (docs/find-max.md): burn(n) spends
-- CPU in proportion to n, burn_rate(n, calls) says how many calls one core does a second.
local clock = require('clock')

function burn(n)
    local x = 0
    for i = 1, n do x = x + i % 7 end
    return x
end

function burn_rate(n, calls)
    local t0 = clock.thread()
    for _ = 1, calls do burn(n) end
    return calls / (clock.thread() - t0)
end
