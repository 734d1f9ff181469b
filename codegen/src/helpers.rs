//! The Lua helpers the input checks call, each written once here: the one rule for
//! integers and floats, how a bad value is shown in an error, and how the key check reads
//! key names. `redis-patterns fix` pastes those a script needs with its shared helpers,
//! and the Functions library defines them once.

/// Each helper, by name, in an order where each comes after those it calls.
pub(crate) const HELPERS: [(&str, &str); 10] = [
    ("decimal_less", DECIMAL_LESS),
    ("integer", INTEGER),
    ("safe_integer", SAFE_INTEGER),
    ("float", FLOAT),
    ("shown", SHOWN),
    ("key_group", KEY_GROUP),
    ("key_cut", KEY_CUT),
    ("key_split", KEY_SPLIT),
    ("key_content_fits", KEY_CONTENT_FITS),
    ("key_group_fits", KEY_GROUP_FITS),
];

/// The locals of the input checks' loops (an index, and the value at it), which no key or
/// argument may be named as: inside a loop, its local would hide theirs.
pub(crate) const LOOP_LOCALS: [&str; 2] = ["i", "each"];

const DECIMAL_LESS: &str = "\
-- Whether decimal integer a is less than b, both in the one canonical form below: by sign,
-- then length, then in two parts of at most 10 digits, each exact in Lua's numbers, so that
-- 64-bit values compare exactly (and no locale's collation is involved).
local function decimal_less(a, b)
  local a_negative, b_negative = string.sub(a, 1, 1) == '-', string.sub(b, 1, 1) == '-'
  if a_negative ~= b_negative then
    return a_negative
  end
  if a_negative then
    a, b = string.sub(b, 2), string.sub(a, 2)
  end
  if #a ~= #b then
    return #a < #b
  end
  local a_high, b_high = tonumber(string.sub(a, 1, 10)), tonumber(string.sub(b, 1, 10))
  if a_high ~= b_high then
    return a_high < b_high
  end
  return (tonumber(string.sub(a, 11)) or 0) < (tonumber(string.sub(b, 11)) or 0)
end
";

const INTEGER: &str = "\
-- The one rule for integers: decimal digits, an optional leading '-', no leading zero, and
-- no '+', space, fraction, exponent or hex; within min and max. Returns the text itself.
local function integer(s, min, max)
  if s ~= '0' and not string.match(s, '^%-?[1-9]%d*$') then
    return nil
  end
  -- Up to 15 characters a value is exact in a Lua number, and a bound rounded to one
  -- still falls on the same side of it.
  if #s <= 15 then
    local n = tonumber(s)
    return n >= tonumber(min) and n <= tonumber(max) and s or nil
  end
  if decimal_less(s, min) or decimal_less(max, s) then
    return nil
  end
  return s
end
";

const SAFE_INTEGER: &str = "\
-- The same rule where min and max are within 2^53 - 1 of 0, on a fast path: there every
-- integer is exact in Lua's numbers, and a longer one rounds to a number out of range.
-- Returns the number.
local function safe_integer(s, min, max)
  local n = (s == '0' or string.match(s, '^%-?[1-9]%d*$')) and tonumber(s)
  if n and n >= min and n <= max then
    return n
  end
end
";

const FLOAT: &str = "\
-- The one rule for floats: decimal digits with an optional leading '-', then an optional
-- fraction and an optional exponent (`e` or `E`, an optional sign, digits), as Python,
-- JavaScript, Java, Go and C print floats (1e+16, 1e-07, 1.0E16); no leading zero, '+'
-- before the number, space, hex, inf or nan.
local function float(s)
  local whole, fraction, exponent = string.match(s, '^%-?(%d+)(%.?%d*)(.*)$')
  if not whole or (#whole > 1 and string.sub(whole, 1, 1) == '0') or fraction == '.' then
    return nil
  end
  if exponent ~= '' and not string.match(exponent, '^[eE][%+%-]?%d+$') then
    return nil
  end
  local n = tonumber(s)
  if n ~= n or n == math.huge or n == -math.huge then
    return nil
  end
  return n
end
";

const SHOWN: &str = "\
-- A bad argument as an error shows it: its first 32 bytes, other than printable ASCII
-- escaped, and its length when it is longer.
local function shown(s)
  local head = string.gsub(string.sub(s, 1, 32), '[^%w%p ]', function(c)
    return string.format('\\\\%03d', string.byte(c))
  end)
  if #s > 32 then
    return '\"' .. head .. '\"... (' .. #s .. ' bytes)'
  end
  return '\"' .. head .. '\"'
end
";

const KEY_GROUP: &str = "\
-- The hash tag group that a template's `{…}` makes of value `s`: `s` itself when it holds a
-- hash tag (a `{`, then the first `}` after it, with at least one byte between), else `s` in
-- braces; nil for an empty value, or one with a `}` but no hash tag.
local function key_group(s)
  if string.find(s, '^[^{]*{[^}]+}') then
    return s
  end
  if s ~= '' and not string.find(s, '}', 1, true) then
    return '{' .. s .. '}'
  end
end
";

const KEY_CUT: &str = "\
-- What key name `s` holds between `head` and `tail`, when it is `head`, at least one byte,
-- then `tail`; else nil.
local function key_cut(s, head, tail)
  local stop = #s - #tail
  if stop > #head and string.sub(s, 1, #head) == head and string.sub(s, stop + 1) == tail then
    return string.sub(s, #head + 1, stop)
  end
end
";

const KEY_SPLIT: &str = "\
-- Reads key name `s` as texts[1], a value, texts[2], a value, ..., texts[#texts]: each value
-- at least one byte and as short as it can be, a first value that is a hash tag group
-- (`group` true) up to the `}` of its hash tag at least. Returns the values, or nil when `s`
-- is not of that form.
local function key_split(s, texts, group)
  if string.sub(s, 1, #texts[1]) ~= texts[1] then
    return nil
  end
  local values, at = {}, #texts[1] + 1
  for n = 2, #texts do
    local least = at
    if n == 2 and group then
      local open = string.find(s, '{', at, true)
      least = open and string.find(s, '}', open + 1, true)
      if not least or least == open + 1 then
        return nil
      end
    end
    local stop = #s - #texts[n]
    if n < #texts then
      stop = (string.find(s, texts[n], least + 1, true) or 0) - 1
    end
    if stop < least or string.sub(s, stop + 1, stop + #texts[n]) ~= texts[n] then
      return nil
    end
    values[n - 1] = string.sub(s, at, stop)
    at = stop + #texts[n] + 1
  end
  return values
end
";

const KEY_CONTENT_FITS: &str = "\
-- Whether group content `c` is made of values as `texts` says (see key_split), with its hash
-- tag, when it holds one, inside one value: read with the tag as one byte that no text
-- holds, as a tag across two values would hash by text that neither holds.
local function key_content_fits(c, texts)
  local open = string.find(c, '{', 1, true)
  local close = open and string.find(c, '}', open + 1, true)
  if close and close > open + 1 then
    c = string.sub(c, 1, open - 1) .. '\\0' .. string.sub(c, close + 1)
  end
  return key_split(c, texts) ~= nil
end
";

const KEY_GROUP_FITS: &str = "\
-- Whether hash tag group `g` is made of values as `texts` says (see key_content_fits): the
-- text between its braces, or `g` itself when it holds a hash tag.
local function key_group_fits(g, texts)
  local inner = string.match(g, '^{([^}]+)}$')
  return (inner ~= nil and key_split(inner, texts) ~= nil) or key_content_fits(g, texts)
end
";
