"""Reference solutions of the coding environment's hard tasks (``tests/envs/coding_reference.py`` holds the
others and joins them into ``SOLUTIONS``)."""

HARD_SOLUTIONS: dict[str, str] = {
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
