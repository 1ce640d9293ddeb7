"""The contract the constructs, the Lambda handlers and the CLI share about a training run.

``lifecycle``: events, error names, tags and the task's output; ``naming``: per-attempt job
names; ``overrides``: what an execution's input may change in the synthesized spec;
``training_job``: a job as DescribeTrainingJob answers, or none.
"""

__all__: list[str] = []
