"""The reward-hacking catalogue: the known ways an agent games a grader, its sandbox or its server,
each run against the envs that score agent work (Coding-v0, CodingTools-v0, Git-v0,
ReasoningGym-v0, Chess-v0, Harness-v0 and the served PettingZoo games), each scoring no more than an honest
agent doing the same would (0 for most).

The classes, and where each runs:

- the grader's own channels (exiting early, forged result lines, always-equal objects, patched
  builtins, reading the tests, leaving a process behind...): ``test_coding.py``'s ``ATTACKS``,
  ``test_git.py`` (solutions planted for the verifier's git, unreadable files);
- what survives a run (files, processes, System V and POSIX IPC, sockets, environment, clock,
  counters such as the next pid): ``test_persistence.py``;
- pass information as an oracle (which hidden tests passed, their order, counting calls):
  ``test_oracle.py``;
- constant and degenerate answers (NaN, infinities, the question echoed, a split's most common
  answer, verifiers that choke): ``test_reasoning_gym.py``, and for Coding and Git
  ``tests/test_constant_answers_benchmark.py`` over ``benchmarks/constant_answers.py``;
- the model choosing its own task (reset options through every face a model drives, an unknown
  id listing the others, locked splits): ``test_task_choice.py``;
- games (squatting a game id, a client's turn timeout, stalling by illegal moves, leaving or
  overrunning a turn, replaying a memorised line, taking the opponent's seat): ``test_games.py``,
  ``test_chess.py``;
- the shared-memory segment used against the server (resizing, scribbling, a dying channel):
  ``test_segment.py``;
- through a harness (Harness-v0's agent on Coding and Git tasks: editing the tests, reading the
  grader's files, writing outside the workspace, a process left behind, a reward paid twice, the
  task chosen by the model): ``test_harness_hacks.py``.
"""
