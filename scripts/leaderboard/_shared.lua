--- Helpers of the leaderboard scripts, each defined here once. `redis-patterns fix` pastes
--- the ones a script names in `@uses` into it, and the build refuses a copy that differs
--- from this file.
-- luacheck: ignore 211

-- A score as a member of `levels`: one spelling per value, whatever the server's own;
-- 0 and -0 are one level.
local function level(score)
  if score == 0 then
    return '0'
  end
  return string.format('%.17g', score)
end
