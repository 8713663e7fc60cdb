"""A 2-node Ray cluster on this machine (``ray.cluster_utils.Cluster``: two raylets, one CPU each)
judges the example with one worker per node, joined through ``ray_address`` as ``--ray`` joins one,
and gives the in-process report byte for byte. (It resumes from half the in-process run's calls, to
keep the test short on 2 cores: the other half is judged on the cluster.)"""

from __future__ import annotations

import pytest

from tests.ray_common import partial_cache, report_bytes, tiny_run

pytestmark = pytest.mark.slow


def test_a_two_node_cluster_gives_the_in_process_bytes(tiny_baseline, tmp_path):
    ray = pytest.importorskip("ray")
    from ray.cluster_utils import Cluster

    if ray.is_initialized():  # another module's local instance: this test joins a cluster of its own
        ray.shutdown()
    cluster = Cluster(initialize_head=True, head_node_args={"num_cpus": 1, "include_dashboard": False})
    try:
        cluster.add_node(num_cpus=1)
        cluster.wait_for_nodes()
        expected, baseline_cache = tiny_baseline
        partial_cache(baseline_cache, tmp_path / "c.sqlite")  # half the calls left: judged on the two nodes
        result = tiny_run(tmp_path / "c.sqlite", ray_address=cluster.address, workers=2, n_threads=1)
        assert (result.timing["workers"], result.timing["nodes"]) == (2, 2)  # one CPU a node: one worker each
        assert report_bytes(result) == report_bytes(expected)
        assert not ray.is_initialized()  # the run joined the cluster and left it
    finally:
        cluster.shutdown()
