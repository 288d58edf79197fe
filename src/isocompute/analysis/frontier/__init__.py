"""From curves to answers: the compute-optimal envelope, the n* law, bootstrap intervals,
what may be claimed, the secondary studies, the allocation advice."""
