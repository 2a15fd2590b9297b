"""Reference solutions for the coding environment's task set.

This module holds one reference solution per task in ``envs/coding/tasks.jsonl``.
The tests use them to show that every task is solvable and that its hidden tests
are right: each solution is executed in a fresh namespace and its entry-point
function is called on every hidden test case.

``SOLUTIONS`` maps a task id to complete Python source code (a string) that
defines the task's entry-point function, together with any helpers and imports
it needs.
"""

SOLUTIONS: dict[str, str] = {
    # ------------------------------------------------------------------ easy
    "digit-square-sum": """
def digit_square_sum(n: int) -> int:
    return sum(int(d) ** 2 for d in str(abs(n)))
""",
    "alternate-case": """
def alternate_case(text: str) -> str:
    out = []
    upper = True
    for ch in text:
        if ch.isalpha():
            out.append(ch.upper() if upper else ch.lower())
            upper = not upper
        else:
            out.append(ch)
    return "".join(out)
""",
    "clamp-values": """
def clamp_values(values: list[int], low: int, high: int) -> list[int]:
    if low > high:
        raise ValueError("low must not exceed high")
    return [min(max(v, low), high) for v in values]
""",
    "count-runs": """
def count_runs(items: list) -> int:
    runs = 0
    for i, item in enumerate(items):
        if i == 0 or item != items[i - 1]:
            runs += 1
    return runs
""",
    "make-initials": """
def make_initials(name: str) -> str:
    return "".join(word[0].upper() + "." for word in name.split())
""",
    "second-largest": """
def second_largest(nums: list[int]) -> int | None:
    distinct = sorted(set(nums), reverse=True)
    return distinct[1] if len(distinct) >= 2 else None
""",
    "is-isogram": """
def is_isogram(word: str) -> bool:
    seen = set()
    for ch in word.lower():
        if ch in "- ":
            continue
        if ch in seen:
            return False
        seen.add(ch)
    return True
""",
    "trimmed-mean": """
def trimmed_mean(nums: list[float]) -> float | None:
    if len(nums) < 3:
        return None
    middle = sorted(nums)[1:-1]
    return sum(middle) / len(middle)
""",
    "describe-count": """
def describe_count(count: int, noun: str) -> str:
    if count == 1:
        return f"{count} {noun}"
    if noun.endswith(("s", "x", "ch", "sh")):
        plural = noun + "es"
    elif len(noun) >= 2 and noun[-1] == "y" and noun[-2].lower() not in "aeiou":
        plural = noun[:-1] + "ies"
    else:
        plural = noun + "s"
    return f"{count} {plural}"
""",
    "digital-root": """
def digital_root(n: int) -> int:
    while n >= 10:
        n = sum(int(d) for d in str(n))
    return n
""",
    "chunk-list": """
def chunk_list(items: list, size: int) -> list[list]:
    return [items[i:i + size] for i in range(0, len(items), size)]
""",
    "rotate-left": """
def rotate_left(items: list, k: int) -> list:
    if not items:
        return []
    k %= len(items)
    return items[k:] + items[:k]
""",
    "letter-counts": """
def letter_counts(text: str) -> dict[str, int]:
    counts: dict[str, int] = {}
    for ch in text:
        if ch.isalpha():
            key = ch.lower()
            counts[key] = counts.get(key, 0) + 1
    return counts
""",
    "running-max": """
def running_max(nums: list[int]) -> list[int]:
    out = []
    for x in nums:
        out.append(x if not out else max(out[-1], x))
    return out
""",
    "snake-to-camel": """
def snake_to_camel(name: str) -> str:
    words = [w for w in name.split("_") if w]
    if not words:
        return ""
    return words[0].lower() + "".join(w[0].upper() + w[1:].lower() for w in words[1:])
""",
    "is-leap-year": """
def is_leap_year(year: int) -> bool:
    return year % 4 == 0 and (year % 100 != 0 or year % 400 == 0)
""",
    "count-overlapping": """
def count_overlapping(text: str, pattern: str) -> int:
    if not pattern:
        return 0
    return sum(
        1 for i in range(len(text) - len(pattern) + 1)
        if text.startswith(pattern, i)
    )
""",
    "digits-balanced": """
def digits_balanced(n: int) -> bool:
    digits = [int(d) for d in str(abs(n))]
    half = len(digits) // 2
    return sum(digits[:half]) == sum(digits[len(digits) - half:])
""",
    "dedupe": """
def dedupe(items: list) -> list:
    seen = set()
    out = []
    for item in items:
        if item not in seen:
            seen.add(item)
            out.append(item)
    return out
""",
    "char-mismatches": """
def char_mismatches(a: str, b: str) -> int:
    common = sum(1 for x, y in zip(a, b) if x != y)
    return common + abs(len(a) - len(b))
""",
    # ---------------------------------------------------------------- medium
    "rle-encode": """
def rle_encode(text: str) -> str:
    out = []
    i = 0
    while i < len(text):
        j = i
        while j < len(text) and text[j] == text[i]:
            j += 1
        run = j - i
        out.append((str(run) if run > 1 else "") + text[i])
        i = j
    return "".join(out)
""",
    "rle-decode": """
def rle_decode(encoded: str) -> str:
    out = []
    digits = ""
    for ch in encoded:
        if ch in "0123456789":
            digits += ch
        else:
            out.append(ch * (int(digits) if digits else 1))
            digits = ""
    return "".join(out)
""",
    "covered-length": """
def covered_length(intervals: list[list[int]]) -> int:
    spans = sorted((s, e) for s, e in intervals if e > s)
    total = 0
    cur_start = cur_end = None
    for s, e in spans:
        if cur_end is None or s > cur_end:
            if cur_end is not None:
                total += cur_end - cur_start
            cur_start, cur_end = s, e
        else:
            cur_end = max(cur_end, e)
    if cur_end is not None:
        total += cur_end - cur_start
    return total
""",
    "anti-diagonal-sums": """
def anti_diagonal_sums(matrix: list[list[int]]) -> list[int]:
    if not matrix or not matrix[0]:
        return []
    rows, cols = len(matrix), len(matrix[0])
    sums = [0] * (rows + cols - 1)
    for i, row in enumerate(matrix):
        for j, value in enumerate(row):
            sums[i + j] += value
    return sums
""",
    "to-roman": """
def to_roman(n: int) -> str:
    if not 1 <= n <= 3999:
        raise ValueError("n must be between 1 and 3999")
    table = [
        (1000, "M"), (900, "CM"), (500, "D"), (400, "CD"),
        (100, "C"), (90, "XC"), (50, "L"), (40, "XL"),
        (10, "X"), (9, "IX"), (5, "V"), (4, "IV"), (1, "I"),
    ]
    out = []
    for value, symbol in table:
        count, n = divmod(n, value)
        out.append(symbol * count)
    return "".join(out)
""",
    "brackets-balanced": """
def brackets_balanced(text: str) -> bool:
    pairs = {")": "(", "]": "[", "}": "{"}
    stack = []
    for ch in text:
        if ch in "([{":
            stack.append(ch)
        elif ch in pairs:
            if not stack or stack.pop() != pairs[ch]:
                return False
    return not stack
""",
    "anagram-groups": """
def anagram_groups(words: list[str]) -> list[list[str]]:
    groups: dict[str, list[str]] = {}
    for word in words:
        groups.setdefault("".join(sorted(word)), []).append(word)
    return sorted(sorted(group) for group in groups.values())
""",
    "wrap-text": """
def wrap_text(text: str, width: int) -> list[str]:
    lines: list[str] = []
    current = ""
    for word in text.split():
        if not current:
            current = word
        elif len(current) + 1 + len(word) <= width:
            current += " " + word
        else:
            lines.append(current)
            current = word
    if current:
        lines.append(current)
    return lines
""",
    "parse-duration": """
import re

_DURATION = re.compile(r"(?:([0-9]+)d)?(?:([0-9]+)h)?(?:([0-9]+)m)?(?:([0-9]+)s)?")

def parse_duration(spec: str) -> int:
    match = _DURATION.fullmatch(spec)
    if not spec or match is None:
        raise ValueError(f"invalid duration: {spec!r}")
    total = 0
    for group, unit in zip(match.groups(), (86400, 3600, 60, 1)):
        if group is not None:
            total += int(group) * unit
    return total
""",
    "minutes-until": """
def minutes_until(start: str, end: str) -> int:
    def to_minutes(clock: str) -> int:
        hours, minutes = clock.split(":")
        return int(hours) * 60 + int(minutes)
    return (to_minutes(end) - to_minutes(start)) % 1440
""",
    "weekday-after": """
DAYS = ["Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun"]

def weekday_after(day: str, offset: int) -> str:
    return DAYS[(DAYS.index(day) + offset) % 7]
""",
    "day-of-year": """
def day_of_year(year: int, month: int, day: int) -> int:
    leap = year % 4 == 0 and (year % 100 != 0 or year % 400 == 0)
    lengths = [31, 29 if leap else 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31]
    if not 1 <= month <= 12 or not 1 <= day <= lengths[month - 1]:
        return -1
    return sum(lengths[:month - 1]) + day
""",
    "longest-distinct-run": """
def longest_distinct_run(text: str) -> str:
    last_seen: dict[str, int] = {}
    best_start, best_len = 0, 0
    start = 0
    for i, ch in enumerate(text):
        if ch in last_seen and last_seen[ch] >= start:
            start = last_seen[ch] + 1
        last_seen[ch] = i
        if i - start + 1 > best_len:
            best_start, best_len = start, i - start + 1
    return text[best_start:best_start + best_len]
""",
    "max-window-sum": """
def max_window_sum(nums: list[int]) -> int:
    if not nums:
        return 0
    best = current = nums[0]
    for x in nums[1:]:
        current = max(x, current + x)
        best = max(best, current)
    return best
""",
    "count-change-ways": """
def count_change_ways(amount: int, coins: list[int]) -> int:
    ways = [1] + [0] * amount
    for coin in coins:
        for value in range(coin, amount + 1):
            ways[value] += ways[value - coin]
    return ways[amount]
""",
    "pascal-row": """
def pascal_row(n: int) -> list[int]:
    if n < 0:
        return []
    row = [1]
    for _ in range(n):
        row = [a + b for a, b in zip([0] + row, row + [0])]
    return row
""",
    "prime-factors": """
def prime_factors(n: int) -> list[int]:
    factors = []
    if n < 2:
        return factors
    d = 2
    while d * d <= n:
        while n % d == 0:
            factors.append(d)
            n //= d
        d += 1 if d == 2 else 2
    if n > 1:
        factors.append(n)
    return factors
""",
    "flatten": """
def flatten(nested: list) -> list:
    out = []
    stack = [iter(nested)]
    while stack:
        for item in stack[-1]:
            if isinstance(item, list):
                stack.append(iter(item))
                break
            out.append(item)
        else:
            stack.pop()
    return out
""",
    "summarize-ranges": """
def summarize_ranges(nums: list[int]) -> list[str]:
    values = sorted(set(nums))
    out = []
    i = 0
    while i < len(values):
        j = i
        while j + 1 < len(values) and values[j + 1] == values[j] + 1:
            j += 1
        out.append(str(values[i]) if i == j else f"{values[i]}..{values[j]}")
        i = j + 1
    return out
""",
    "caesar-shift": """
def caesar_shift(text: str, shift: int) -> str:
    out = []
    for ch in text:
        if "a" <= ch <= "z":
            out.append(chr((ord(ch) - 97 + shift) % 26 + 97))
        elif "A" <= ch <= "Z":
            out.append(chr((ord(ch) - 65 + shift) % 26 + 65))
        else:
            out.append(ch)
    return "".join(out)
""",
    "mat-mul": """
def mat_mul(a: list[list[int]], b: list[list[int]]) -> list[list[int]]:
    if len(a[0]) != len(b):
        raise ValueError("inner dimensions differ")
    columns = list(zip(*b))
    return [[sum(x * y for x, y in zip(row, col)) for col in columns] for row in a]
""",
    "apply-transactions": """
def apply_transactions(balance: int, ops: list[list]) -> list[int]:
    rejected = 0
    for kind, amount in ops:
        if kind == "deposit":
            balance += amount
        elif kind == "withdraw" and amount <= balance:
            balance -= amount
        elif kind == "interest":
            if balance > 0:
                balance += balance * amount // 100
        else:
            rejected += 1
    return [balance, rejected]
""",
    # ------------------------------------------------------------------ hard
    "cheapest-route": """
import heapq

def cheapest_route(graph: dict[str, dict[str, int]], start: str, goal: str) -> list | None:
    heap = [(0, [start])]
    done = set()
    while heap:
        cost, path = heapq.heappop(heap)
        node = path[-1]
        if node in done:
            continue
        if node == goal:
            return [cost, path]
        done.add(node)
        for nxt, weight in graph.get(node, {}).items():
            if nxt not in done:
                heapq.heappush(heap, (cost + weight, path + [nxt]))
    return None
""",
    "transposition-distance": """
def transposition_distance(a: str, b: str) -> int:
    n, m = len(a), len(b)
    d = [[0] * (m + 1) for _ in range(n + 1)]
    for i in range(n + 1):
        d[i][0] = i
    for j in range(m + 1):
        d[0][j] = j
    for i in range(1, n + 1):
        for j in range(1, m + 1):
            cost = 0 if a[i - 1] == b[j - 1] else 1
            d[i][j] = min(d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + cost)
            if i > 1 and j > 1 and a[i - 1] == b[j - 2] and a[i - 2] == b[j - 1]:
                d[i][j] = min(d[i][j], d[i - 2][j - 2] + 1)
    return d[n][m]
""",
    "build-order": """
import heapq

def build_order(tasks: list[str], deps: list[list[str]]) -> list[str]:
    known = set(tasks)
    successors: dict[str, set[str]] = {t: set() for t in tasks}
    for before, after in deps:
        if before not in known or after not in known:
            raise ValueError("dependency names an unknown task")
        successors[before].add(after)
    indegree = {t: 0 for t in tasks}
    for before in successors:
        for after in successors[before]:
            indegree[after] += 1
    ready = [t for t in known if indegree[t] == 0]
    heapq.heapify(ready)
    order = []
    while ready:
        task = heapq.heappop(ready)
        order.append(task)
        for after in successors[task]:
            indegree[after] -= 1
            if indegree[after] == 0:
                heapq.heappush(ready, after)
    if len(order) != len(known):
        raise ValueError("dependencies contain a cycle")
    return order
""",
    "evaluate": """
def evaluate(expression: str) -> int:
    tokens = []
    i = 0
    while i < len(expression):
        ch = expression[i]
        if ch.isspace():
            i += 1
        elif ch in "0123456789":
            j = i
            while j < len(expression) and expression[j] in "0123456789":
                j += 1
            tokens.append(int(expression[i:j]))
            i = j
        elif ch in "+-*/()":
            tokens.append(ch)
            i += 1
        else:
            raise ValueError(f"unexpected character {ch!r}")
    pos = 0

    def peek():
        return tokens[pos] if pos < len(tokens) else None

    def take():
        nonlocal pos
        if pos >= len(tokens):
            raise ValueError("unexpected end of expression")
        token = tokens[pos]
        pos += 1
        return token

    def divide(a: int, b: int) -> int:
        if b == 0:
            raise ZeroDivisionError("division by zero")
        q = abs(a) // abs(b)
        return q if (a >= 0) == (b >= 0) else -q

    def expr() -> int:
        value = term()
        while peek() in ("+", "-"):
            if take() == "+":
                value += term()
            else:
                value -= term()
        return value

    def term() -> int:
        value = factor()
        while peek() in ("*", "/"):
            if take() == "*":
                value *= factor()
            else:
                value = divide(value, factor())
        return value

    def factor() -> int:
        token = take()
        if token == "-":
            return -factor()
        if token == "+":
            return factor()
        if token == "(":
            value = expr()
            if take() != ")":
                raise ValueError("expected ')'")
            return value
        if isinstance(token, int):
            return token
        raise ValueError(f"unexpected token {token!r}")

    result = expr()
    if pos != len(tokens):
        raise ValueError("trailing tokens")
    return result
""",
    "lru-simulate": """
from collections import OrderedDict

def lru_simulate(capacity: int, requests: list[str]) -> list:
    cache: OrderedDict[str, None] = OrderedDict()
    misses = 0
    for key in requests:
        if key in cache:
            cache.move_to_end(key)
            continue
        misses += 1
        if capacity <= 0:
            continue
        if len(cache) >= capacity:
            cache.popitem(last=False)
        cache[key] = None
    return [misses, list(reversed(cache))]
""",
    "sudoku-valid": """
def sudoku_valid(rows: list[str]) -> bool:
    if len(rows) != 9 or any(len(row) != 9 for row in rows):
        return False
    seen = set()
    for r, row in enumerate(rows):
        for c, ch in enumerate(row):
            if ch == ".":
                continue
            if ch not in "123456789":
                return False
            keys = [("row", r, ch), ("col", c, ch), ("box", r // 3, c // 3, ch)]
            if any(key in seen for key in keys):
                return False
            seen.update(keys)
    return True
""",
    "free-slots": """
def free_slots(busy: list[list[int]], day_start: int, day_end: int,
               min_length: int) -> list[list[int]]:
    slots = []
    cursor = day_start
    for s, e in sorted((s, e) for s, e in busy if e > s):
        if s > cursor:
            gap_end = min(s, day_end)
            if gap_end - cursor >= min_length and gap_end > cursor:
                slots.append([cursor, gap_end])
        cursor = max(cursor, e)
        if cursor >= day_end:
            break
    if day_end > cursor and day_end - cursor >= min_length:
        slots.append([cursor, day_end])
    return slots
""",
    "run-stack-program": """
def run_stack_program(program: list[str]) -> list[int]:
    stack: list[int] = []
    pc = 0
    executed = 0

    def pop() -> int:
        if not stack:
            raise ValueError("stack underflow")
        return stack.pop()

    def target(arg: str) -> int:
        index = int(arg)
        if not 0 <= index <= len(program):
            raise ValueError("jump target out of range")
        return index

    while 0 <= pc < len(program):
        executed += 1
        if executed > 10_000:
            raise RuntimeError("instruction limit exceeded")
        parts = program[pc].split()
        op, args = parts[0] if parts else "", parts[1:]
        pc += 1
        if op == "push" and len(args) == 1:
            stack.append(int(args[0]))
        elif op == "pop" and not args:
            pop()
        elif op == "dup" and not args:
            value = pop()
            stack.extend([value, value])
        elif op == "over" and not args:
            b, a = pop(), pop()
            stack.extend([a, b, a])
        elif op == "swap" and not args:
            b, a = pop(), pop()
            stack.extend([b, a])
        elif op in ("add", "sub", "mul") and not args:
            b, a = pop(), pop()
            stack.append(a + b if op == "add" else a - b if op == "sub" else a * b)
        elif op == "jz" and len(args) == 1:
            if pop() == 0:
                pc = target(args[0])
        elif op == "jmp" and len(args) == 1:
            pc = target(args[0])
        else:
            raise ValueError(f"bad instruction: {program[pc - 1]!r}")
    return stack
""",
    "two-color": """
from collections import deque

def two_color(graph: dict[str, list[str]]) -> dict[str, int] | None:
    adjacency: dict[str, set[str]] = {}
    for node, neighbours in graph.items():
        adjacency.setdefault(node, set())
        for other in neighbours:
            if other == node:
                return None
            adjacency[node].add(other)
            adjacency.setdefault(other, set()).add(node)
    colors: dict[str, int] = {}
    for root in sorted(adjacency):
        if root in colors:
            continue
        colors[root] = 0
        queue = deque([root])
        while queue:
            node = queue.popleft()
            for other in adjacency[node]:
                if other not in colors:
                    colors[other] = 1 - colors[node]
                    queue.append(other)
                elif colors[other] == colors[node]:
                    return None
    return colors
""",
    "best-knapsack": """
def best_knapsack(items: list[list[int]], capacity: int) -> int:
    best = [0] * (capacity + 1)
    for weight, value in items:
        for room in range(capacity, weight - 1, -1):
            best[room] = max(best[room], best[room - weight] + value)
    return best[capacity] if capacity >= 0 else 0
""",
    "window-medians": """
from bisect import insort, bisect_left

def window_medians(nums: list[int], k: int) -> list[float]:
    if k <= 0 or k > len(nums):
        return []
    window = sorted(nums[:k])
    out = []
    for i in range(k, len(nums) + 1):
        mid = k // 2
        if k % 2:
            out.append(float(window[mid]))
        else:
            out.append((window[mid - 1] + window[mid]) / 2)
        if i < len(nums):
            del window[bisect_left(window, nums[i - k])]
            insort(window, nums[i])
    return out
""",
    "glob-match": """
def glob_match(pattern: str, text: str) -> bool:
    tokens = []
    i = 0
    while i < len(pattern):
        ch = pattern[i]
        if ch == "[":
            j = i + 1
            negate = j < len(pattern) and pattern[j] == "!"
            if negate:
                j += 1
            close = pattern.find("]", j)
            if close != -1:
                body = pattern[j:close]
                members = []
                k = 0
                while k < len(body):
                    if k + 2 < len(body) and body[k + 1] == "-":
                        members.append((body[k], body[k + 2]))
                        k += 3
                    else:
                        members.append((body[k], body[k]))
                        k += 1
                tokens.append(("class", negate, members))
                i = close + 1
                continue
            tokens.append(("lit", ch))
        elif ch == "?":
            tokens.append(("any",))
        elif ch == "*":
            tokens.append(("star",))
        else:
            tokens.append(("lit", ch))
        i += 1

    def single(token, c: str) -> bool:
        if token[0] == "any":
            return True
        if token[0] == "lit":
            return token[1] == c
        inside = any(lo <= c <= hi for lo, hi in token[2])
        return inside != token[1]

    n = len(text)
    # reach[j]: the tokens consumed so far can match text[:j]
    reach = [True] + [False] * n
    for token in tokens:
        if token[0] == "star":
            for j in range(1, n + 1):
                reach[j] = reach[j] or reach[j - 1]
        else:
            reach = [False] + [reach[j - 1] and single(token, text[j - 1]) for j in range(1, n + 1)]
    return reach[n]
""",
    "parse-csv-line": """
def parse_csv_line(line: str) -> list[str]:
    fields = []
    i = 0
    n = len(line)
    while True:
        if i < n and line[i] == '"':
            i += 1
            chars = []
            while True:
                if i >= n:
                    raise ValueError("unterminated quoted field")
                if line[i] == '"':
                    if i + 1 < n and line[i + 1] == '"':
                        chars.append('"')
                        i += 2
                        continue
                    i += 1
                    break
                chars.append(line[i])
                i += 1
            if i < n and line[i] != ",":
                raise ValueError("text after closing quote")
            fields.append("".join(chars))
        else:
            j = line.find(",", i)
            if j == -1:
                j = n
            fields.append(line[i:j])
            i = j
        if i >= n:
            return fields
        i += 1  # skip the comma; a trailing comma yields one more empty field
""",
    "max-weight-schedule": """
from bisect import bisect_right

def max_weight_schedule(jobs: list[list[int]]) -> int:
    ordered = sorted(jobs, key=lambda job: job[1])
    ends = [job[1] for job in ordered]
    best = [0] * (len(ordered) + 1)
    for i, (start, end, weight) in enumerate(ordered, 1):
        compatible = bisect_right(ends, start, 0, i - 1)
        best[i] = max(best[i - 1], best[compatible] + weight)
    return best[-1]
""",
}
