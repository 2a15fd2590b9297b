"""Reference solutions for the coding environment's task set.

This module holds one reference solution per task in ``envs/coding/tasks.jsonl``.
The tests use them to show that every task is solvable and that its hidden tests
are right: each solution is executed in a fresh namespace and its entry-point
function is called on every hidden test case.

``SOLUTIONS`` maps a task id to complete Python source code (a string) that
defines the task's entry-point function, together with any helpers and imports
it needs.
"""

from tests.envs.coding_reference_hard import HARD_SOLUTIONS

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
}
SOLUTIONS.update(HARD_SOLUTIONS)  # the hard tasks' last, in the task set's order
