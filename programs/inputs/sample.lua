-- toyvm test input: a small Lua program of the project's own, read as text
-- by programs/tokenizer.tasm and programs/crc32.tasm (never run).

local function sieve(limit)
  local composite = {}
  local count = 0
  for i = 2, limit do
    if not composite[i] then
      count = count + 1
      for j = i * i, limit, i do
        composite[j] = true
      end
    end
  end
  return count
end

local function fib(n)
  local a, b = 0, 1
  for _ = 1, n do
    a, b = b, a + b
  end
  return a
end

local function checksum(text)
  local h = 2166136261
  for k = 1, #text do
    h = (h ~ text:byte(k)) * 16777619 % 4294967296
  end
  return h
end

local primes = sieve(100000)
local f30 = fib(30)
print("primes below 100000: " .. primes)
print("fib(30) = " .. f30)
print(string.format("checksum %08x", checksum("toyvm " .. primes .. " " .. f30)))
