-- Redis runs scripts as Lua 5.1 in a sandbox: KEYS, ARGV and the redis libraries are
-- read-only globals, and creating a global is an error there, so it is one here too.
std = "lua51"
read_globals = { "redis", "KEYS", "ARGV", "cjson", "cmsgpack", "bit", "struct" }
allow_defined = false
allow_defined_top = false
max_line_length = 120
