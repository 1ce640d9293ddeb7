"""The model's patterns are Java regular expressions: every one compiles in Python, each Java
class has a documented translation, and the wide translations never reject what Java accepts."""

from __future__ import annotations

import re
import string
import sys
import unicodedata
import warnings
from collections.abc import Iterator
from functools import cache

import pytest
from botocore.model import ListShape, MapShape, Shape, StructureShape
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from hetero_constructs.service import model as service_model
from hetero_constructs.service import request_validator
from hetero_constructs.service.model import input_shape
from hetero_constructs.service.patterns import (
    JAVA_CLASSES,
    UNCHECKED_PATTERNS,
    UntranslatablePattern,
    compile_pattern,
    translate_pattern,
)

JAVA_CLASS = re.compile(r"\\[pP](?:\{\w+\}|[A-Za-z])")
CREDENTIALS_ARN = (
    "AlgorithmSpecification",
    "TrainingImageConfig",
    "TrainingRepositoryAuthConfig",
    "TrainingRepositoryCredentialsProviderArn",
)


def shapes_under(shape: Shape, seen: set[str] | None = None) -> Iterator[Shape]:
    seen = set() if seen is None else seen
    if shape.name in seen:
        return
    seen.add(shape.name)
    yield shape
    children: list[Shape] = []
    if isinstance(shape, StructureShape):
        children = list(shape.members.values())
    elif isinstance(shape, ListShape):
        children = [shape.member]
    elif isinstance(shape, MapShape):
        children = [shape.key, shape.value]
    for child in children:
        yield from shapes_under(child, seen)


def patterns_of(shapes: Iterator[Shape]) -> set[str]:
    return {s.metadata["pattern"] for s in shapes if "pattern" in s.metadata}


def create_training_job_patterns() -> set[str]:
    return patterns_of(shapes_under(input_shape()))


def every_model_pattern() -> set[str]:
    model = service_model._service_model()
    return patterns_of(model.shape_for(name) for name in model.shape_names)


def compiles_cleanly(pattern: str) -> re.Pattern[str]:
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # e.g. FutureWarning for a Java nested set
        return re.compile(translate_pattern(pattern), re.DOTALL)


@pytest.mark.parametrize(
    "patterns", [create_training_job_patterns, every_model_pattern], ids=["input", "model"]
)
def test_every_pattern_compiles_after_translation(patterns: object) -> None:
    assert callable(patterns)
    found = patterns()
    assert len(found) > 20
    for pattern in found:
        compiles_cleanly(pattern)
        compile_pattern(pattern)
    assert not UNCHECKED_PATTERNS


def test_every_java_class_in_the_model_has_a_documented_translation() -> None:
    used = {c for p in every_model_pattern() for c in JAVA_CLASS.findall(p)}
    assert r"\p{Alnum}" in used and r"\p{L}" in used  # the search finds what it looks for
    for java in used:
        assert java in JAVA_CLASSES, f"{java} has no translation"
        assert JAVA_CLASSES[java].note


@cache
def characters_by_category() -> dict[str, str]:
    """Every code point, by the first letter of its Unicode general category."""
    found: dict[str, list[str]] = {}
    for code in range(sys.maxunicode + 1):
        character = chr(code)
        found.setdefault(unicodedata.category(character)[0], []).append(character)
    return {letter: "".join(characters) for letter, characters in found.items()}


@pytest.mark.parametrize("letter", ["L", "N", "Z", "M", "P", "S", "C"])
def test_category_translations_take_every_character_of_the_category(letter: str) -> None:
    """A wide translation may take more than Java, never less (Unicode as Python knows it)."""
    java = JAVA_CLASSES[f"\\p{{{letter}}}"]
    characters = characters_by_category()[letter]
    assert characters and java.note
    assert re.fullmatch(translate_pattern(f"\\p{{{letter}}}*"), characters, re.DOTALL)
    assert re.fullmatch(translate_pattern(f"[\\p{{{letter}}}]*"), characters, re.DOTALL)
    if java.exact:  # takes nothing else
        others = "".join(c for k, v in characters_by_category().items() if k != letter for c in v)
        assert not re.search(translate_pattern(f"[\\p{{{letter}}}]"), others)


def test_separators_are_exact_so_tabs_and_newlines_stay_out() -> None:
    tag = re.compile(translate_pattern(r"([\p{L}\p{Z}\p{N}_.:/=+\-@]*)"), re.DOTALL)
    assert tag.fullmatch("team a\u00a0b\u3000c")
    assert not tag.fullmatch("team\tname") and not tag.fullmatch("team\nname")


# Java's POSIX classes (java.util.regex.Pattern documentation), written out.
POSIX = {
    "Lower": string.ascii_lowercase,
    "Upper": string.ascii_uppercase,
    "ASCII": "".join(map(chr, range(128))),
    "Alpha": string.ascii_letters,
    "Digit": string.digits,
    "Alnum": string.ascii_letters + string.digits,
    "Punct": string.punctuation,
    "Graph": string.ascii_letters + string.digits + string.punctuation,
    "Print": string.ascii_letters + string.digits + string.punctuation + " ",
    "Blank": " \t",
    "Cntrl": "".join(map(chr, range(32))) + "\x7f",
    "XDigit": string.hexdigits,
    "Space": " \t\n\x0b\f\r",
}


@pytest.mark.parametrize("name", sorted(POSIX))
def test_posix_translations_are_exact(name: str) -> None:
    java = JAVA_CLASSES[f"\\p{{{name}}}"]
    assert java.exact
    pattern = re.compile(f"[{java.members}]", re.DOTALL)
    accepted = {chr(code) for code in range(0x3000) if pattern.fullmatch(chr(code))}
    assert accepted == set(POSIX[name])


def test_translations_of_other_java_constructs() -> None:
    # A UTF-16 surrogate pair range is the supplementary planes.
    utf16 = r"[\u0020-\uD7FF\uE000-\uFFFD\uD800\uDC00-\uDBFF\uDFFF\t]*"
    assert re.fullmatch(translate_pattern(utf16), "a\U0001f600\U0010ffff\t")
    assert not re.fullmatch(translate_pattern(utf16), "\x01")
    # A quantified end anchor repeats a zero-width match.
    assert translate_pattern(r"([a-z]*)${1,128}") == r"(?:[a-z]*)$"
    assert translate_pattern(r"[$]{2}") == r"[$]{2}"
    assert translate_pattern(r"x\p{Alnum}+[\p{Alnum}_]") == r"x[a-zA-Z0-9]+[a-zA-Z0-9_]"
    # Groups stop capturing (a full match reads no group), unless a backreference reads one.
    assert translate_pattern(r"(a|b)(?<!-)\(") == r"(?:a|b)(?<!-)\("
    assert translate_pattern(r"(a|b)\1") == r"(a|b)\1"
    for untranslatable in (r"[\P{L}]", r"[a-z&&[^aeiou]]", r"\Qa.b\E", r"\p{IsGreek}"):
        with pytest.raises(UntranslatablePattern):
            translate_pattern(untranslatable)


@pytest.mark.parametrize("pattern", sorted(create_training_job_patterns()))
@settings(max_examples=12, deadline=None, suppress_health_check=list(HealthCheck))
@given(data=st.data())
def test_groups_that_capture_nothing_read_match_the_same_strings(
    pattern: str, data: st.DataObject
) -> None:
    capturing = re.compile(translate_pattern(pattern, keep_groups=True), re.DOTALL)
    plain = re.compile(translate_pattern(pattern), re.DOTALL)
    matching = data.draw(st.from_regex(capturing, fullmatch=True).filter(lambda t: len(t) < 300))
    near = [matching[:-1], matching + "-", "-" + matching, matching.upper()]
    other = data.draw(st.text(alphabet="aZ9-:/._ é", max_size=30) | st.sampled_from(near))
    for text in (matching, other):
        assert bool(plain.fullmatch(text)) == bool(capturing.fullmatch(text)), text


def test_an_untranslatable_pattern_is_not_enforced_and_is_recorded() -> None:
    pattern = r"[\P{L}]+"
    with pytest.warns(RuntimeWarning, match="not enforced"):
        assert compile_pattern(pattern).fullmatch("anything at all")
    assert pattern in UNCHECKED_PATTERNS
    UNCHECKED_PATTERNS.discard(pattern)


def _request_with_credentials_arn(arn: str) -> dict[str, object]:
    request: dict[str, object] = {
        "TrainingJobName": "job",
        "RoleArn": "arn:aws:iam::111122223333:role/Training",
        "OutputDataConfig": {"S3OutputPath": "s3://bucket/out"},
        "ResourceConfig": {"InstanceType": "ml.m5.xlarge", "InstanceCount": 1, "VolumeSizeInGB": 1},
        "StoppingCondition": {"MaxRuntimeInSeconds": 60},
    }
    algorithm = {
        "TrainingImage": "111122223333.dkr.ecr.us-west-2.amazonaws.com/private:1",
        "TrainingInputMode": "File",
        "TrainingImageConfig": {
            "TrainingRepositoryAccessMode": "Vpc",
            "TrainingRepositoryAuthConfig": {"TrainingRepositoryCredentialsProviderArn": arn},
        },
    }
    request["AlgorithmSpecification"] = algorithm
    return request


def test_credentials_provider_arn_gets_a_verdict() -> None:
    """Its pattern uses Java's \\p{Alnum}, which Python's re cannot compile as it stands."""
    shape: Shape = input_shape()
    for name in CREDENTIALS_ARN:
        assert isinstance(shape, StructureShape)
        shape = shape.members[name]
    assert r"\p{Alnum}" in shape.metadata["pattern"]
    with pytest.raises(re.error):
        re.compile(shape.metadata["pattern"])

    good = "arn:aws:lambda:us-west-2:111122223333:function:credentials"
    verdict = request_validator.validate_request(_request_with_credentials_arn(good))
    assert verdict.problems == [] and verdict.botocore_report is None

    bad = "arn:aws_cn:lambda:us-west-2:111122223333:function:credentials"
    verdict = request_validator.validate_request(_request_with_credentials_arn(bad))
    assert [(p.path, p.problem) for p in verdict.problems] == [
        (".".join(CREDENTIALS_ARN), "does not match the API pattern")
    ]
