"""The reward-hacking catalogue: the known ways an agent games a code grader or its sandbox, each
run against the envs that score agent work, each scoring 0 (or what an honest program doing the
same would score). See ``test_coding.py``'s ``ATTACKS`` for the Coding envs' classes.
"""
