"""Property tests of the per-attempt job names (issue 9 item 4).

A name is ``{prefix}-{execution name}-{digest}``: the readable part is cut to fit, so only the
digest (over the execution's ARN and start time, the state's name and entry time, the job key
and the retry count) can tell apart runs whose readable parts agree. The inputs are drawn from
small pools, so that most pairs differ in one field only: exactly the pairs a digest that missed
a field, or was too short, would give the same name.
"""

from __future__ import annotations

import re
import string
from datetime import UTC, datetime

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from hetero_constructs.contract.naming import MAX_JOB_NAME, RunSlot, attempt_job_name, sanitize_name
from hetero_constructs.service import model as service_model

SETTINGS = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
TASK_PREFIX_MAX = 40  # HeterogeneousTrainingTask's job_name_prefix (constructs.task)
# Step Functions names (executions, state machines): 1 to 80 characters, none of these
# (StartExecution's documentation): whitespace, brackets, wildcards, specials, controls.
_NOT_IN_NAMES = ' <>{}[]?*"#%\\^|~`$&,;:/\ufffe\uffff'
_NAME_CHARACTERS = st.characters(
    exclude_categories=("Cc", "Cs", "Zs", "Zl", "Zp"), exclude_characters=_NOT_IN_NAMES
)
_ALNUM_HYPHEN = string.ascii_letters + string.digits + "-"

step_functions_names = st.text(_NAME_CHARACTERS, min_size=1, max_size=80)
task_prefixes = st.text(_ALNUM_HYPHEN, min_size=1, max_size=TASK_PREFIX_MAX).filter(
    lambda prefix: sanitize_name(prefix) == prefix  # no leading or trailing hyphen
)
# An execution may add a prefix of its own (``job_name_prefix`` override, a valid job name).
override_prefixes = st.from_regex(r"[a-zA-Z0-9](-*[a-zA-Z0-9]){0,62}", fullmatch=True)
prefixes = st.one_of(
    task_prefixes,
    st.tuples(task_prefixes, override_prefixes).map(lambda parts: "-".join(parts)),
)
times = st.datetimes(
    min_value=datetime(2020, 1, 1), max_value=datetime(2040, 1, 1), timezones=st.just(UTC)
).map(lambda moment: moment.strftime("%Y-%m-%dT%H:%M:%S.") + f"{moment.microsecond // 1000:03d}Z")
state_names = st.text(st.characters(exclude_categories=("Cs",)), min_size=1, max_size=80)
job_keys = st.one_of(st.just(""), st.integers(0, 10_000).map(str), st.text(max_size=40))
# A task's Retry allows up to 99,999,999 attempts.
retry_counts = st.one_of(st.integers(0, 10), st.integers(0, 99_999_999))


def execution_arn(machine: str, execution: str) -> str:
    return f"arn:aws:states:us-west-2:123456789012:execution:{machine}:{execution}"


def pools(strategy: st.SearchStrategy[str]) -> st.SearchStrategy[list[str]]:
    return st.lists(strategy, min_size=1, max_size=3, unique=True)


@st.composite
def attempts(draw: st.DrawFn) -> list[tuple[str, RunSlot, int]]:
    """Up to 40 distinct (slot, retry count) pairs, each with a prefix, from small pools."""
    machines, executions = draw(pools(step_functions_names)), draw(pools(step_functions_names))
    starts, entries = draw(pools(times)), draw(pools(times))
    states, keys = draw(pools(state_names)), draw(pools(job_keys))
    counts = draw(st.lists(retry_counts, min_size=1, max_size=3, unique=True))
    prefix_pool = draw(pools(prefixes))
    identity = st.tuples(
        st.sampled_from(machines),
        st.sampled_from(executions),
        st.sampled_from(starts),
        st.sampled_from(states),
        st.sampled_from(entries),
        st.sampled_from(keys),
        st.sampled_from(counts),
    )
    drawn = draw(st.lists(identity, min_size=1, max_size=40, unique=True))
    return [
        (
            draw(st.sampled_from(prefix_pool)),
            RunSlot(execution_arn(machine, execution), start, state, entered, key),
            count,
        )
        for machine, execution, start, state, entered, key, count in drawn
    ]


@SETTINGS
@given(attempts())
def test_names_are_unique_valid_and_short(runs: list[tuple[str, RunSlot, int]]) -> None:
    names = [attempt_job_name(prefix, slot, count) for prefix, slot, count in runs]
    assert len(set(names)) == len(names), "two distinct slots or attempts share a job name"
    pattern = service_model.bounds("TrainingJobName")
    assert pattern.maximum == MAX_JOB_NAME == 63
    for name in names:
        assert len(name) <= MAX_JOB_NAME
        assert service_model.matches("TrainingJobName", name), name
        # At least 64 bits of digest end every name (issue 9 item 4).
        assert re.fullmatch(r"[0-9a-f]{16}", name[-16:]), name


@SETTINGS
@given(prefixes, step_functions_names, times, state_names, times, job_keys, retry_counts)
def test_a_name_depends_only_on_its_inputs(
    prefix: str, execution: str, start: str, state: str, entered: str, key: str, count: int
) -> None:
    """The same attempt always gets the same name (a retried invocation finds its job), and the
    readable part shows the prefix and as much of the execution name as fits."""
    slot = RunSlot(execution_arn("machine", execution), start, state, entered, key)
    again = RunSlot(execution_arn("machine", execution), start, state, entered, key)
    name = attempt_job_name(prefix, slot, count)
    assert name == attempt_job_name(prefix, again, count)
    readable = name[: -len("-0123456789abcdef")]
    shown = re.sub("-{2,}", "-", sanitize_name(f"{prefix}-{execution}"))
    assert shown.startswith(readable)
