"""--tune: the search (a fake objective), the spaces, the guide's two comparisons, and a
live tuning of uWSGI and Gunicorn whose best configurations are files runbench reruns."""

from __future__ import annotations

import json
import random
from io import StringIO
from pathlib import Path

import pytest
from django.core.management import CommandError, call_command
from django.db import connection

from djbench.plan import tuning
from djbench.reports import guide
from djbench.results import store
from djbench.results.model import TuneCandidate, TuneRecord
from djbench.servers import SERVERS
from djbench.verdicts.runs import left_unserved, load_run
from tests import resultfiles

# --- the search ------------------------------------------------------------------------


def test_every_server_has_a_small_space_and_a_recommended_layout() -> None:
    for name in SERVERS:
        for cpus in (1, 2, 4):
            found = tuning.space(SERVERS[name].tuning, cpus)
            assert 1 <= len(found) <= 6, (name, cpus)
            assert len({c.label for c in found}) == len(found)
            for c in found:
                SERVERS[name].knob_argv(c.knobs)  # every knob has a flag for its server
    assert tuning.space(SERVERS["daphne"].tuning, 4) == [
        tuning.Candidate(1)
    ]  # one process, nothing to try
    assert tuning.recommended(SERVERS["gunicorn-sync"].tuning, 2) == tuning.Candidate(
        5
    )  # 2 x cores + 1
    assert tuning.recommended(SERVERS["uvicorn"].tuning, 2).workers == 2
    # uWSGI's router holds the connections: its layout is the same at any concurrency.
    assert tuning.recommended(SERVERS["uwsgi"].tuning, 2) == tuning.Candidate(2, 8)
    assert SERVERS["gunicorn-gevent"].knob_argv((("worker_connections", "1000"),)) == [
        "--worker-connections",
        "1000",
    ]
    with pytest.raises(ValueError, match="no knob"):
        SERVERS["uvicorn"].knob_argv((("worker_connections", "1"),))


def fake(truth: dict[tuple[str, str], float], noise: float, seed: int = 1):  # type: ignore[no-untyped-def]
    """A measurement: each candidate's true req/s with +-noise, recorded per call."""
    rng = random.Random(seed)
    calls: list[tuple[int, list[tuning.Key]]] = []

    def measure(
        round_index: int, keys: list[tuning.Key]
    ) -> dict[tuning.Key, tuning.Figures | None]:
        calls.append((round_index, list(keys)))
        answers: dict[tuning.Key, tuning.Figures | None] = {}
        for server, candidate in keys:
            true = truth[(server, candidate.label)]
            if true <= 0:
                answers[(server, candidate)] = None  # it failed
            else:
                answers[(server, candidate)] = (
                    true * rng.uniform(1 - noise, 1 + noise),
                    10.0 + true / 100,
                    50.0,
                )
        return answers

    return measure, calls


def test_successive_halving_finds_the_best_and_spends_trials_on_the_open_questions() -> None:
    spaces = {
        "uwsgi": tuning.space(SERVERS["uwsgi"].tuning, 1),
        "daphne": tuning.space(SERVERS["daphne"].tuning, 1),
    }
    values = [100, 400, 900, 150, 500, 1000]  # threads 32 with 2 processes is best
    truth = {("uwsgi", c.label): v for c, v in zip(spaces["uwsgi"], values, strict=True)}
    truth[("daphne", "workers=1")] = 300
    measure, calls = fake(truth, noise=0.05)
    found = tuning.successive_halving(spaces, measure)
    assert found.best["uwsgi"].label == "workers=2,threads=32"
    assert found.best["daphne"].label == "workers=1"
    # 6 candidates -> 3 -> 2 -> 1: the best has the most trials, the worst one.
    counts = {st.candidate.label: len(st.rps) for st in found.standings["uwsgi"]}
    assert counts["workers=2,threads=32"] == 3 and counts["workers=1,threads=1"] == 1
    assert found.dropped_after[("uwsgi", spaces["uwsgi"][0])] == 1
    assert [len(keys) for _, keys in calls] == [7, 3, 2]  # daphne only in the first round
    assert found.cut == []


def test_the_slo_and_failures_and_the_budget() -> None:
    spaces = {"gunicorn-gthread": tuning.space(SERVERS["gunicorn-gthread"].tuning, 1)}
    labels = [c.label for c in spaces["gunicorn-gthread"]]
    truth = dict.fromkeys((("gunicorn-gthread", label) for label in labels), 500.0)
    truth[("gunicorn-gthread", labels[0])] = 5000.0  # fastest, but its p99 is 60 ms
    truth[("gunicorn-gthread", labels[1])] = -1  # fails to start
    truth[("gunicorn-gthread", labels[2])] = 900.0
    measure, _ = fake(truth, noise=0.0)
    found = tuning.successive_halving(spaces, measure, slo_p99=40.0)
    assert found.best["gunicorn-gthread"].label == labels[2]  # the fastest within the SLO
    failed = next(
        st for st in found.standings["gunicorn-gthread"] if st.candidate.label == labels[1]
    )
    assert failed.failed and failed.score("rps", None) == float("-inf")
    # Out of time before the second round: the first round's leader, and the cut said.
    measure, calls = fake(truth, noise=0.0)
    ticks = iter([False, True])
    cut = tuning.successive_halving(spaces, measure, out_of_time=lambda: next(ticks))
    assert len(calls) == 1 and cut.cut and "round 2 not run" in cut.cut[0]
    assert cut.best["gunicorn-gthread"].label == labels[0]
    # The budget stops round 1 part-way: what was not measured is said as such, never
    # "dropped", and a server with nothing measured is in the cut list.
    spaces2 = {**spaces, "daphne": tuning.space(SERVERS["daphne"].tuning, 1)}
    truth[("daphne", "workers=1")] = 300.0
    full, _ = fake(truth, noise=0.0)

    def partial(
        round_index: int, keys: list[tuning.Key]
    ) -> dict[tuning.Key, tuning.Figures | None]:
        answers = full(round_index, keys)
        return {k: v for k, v in answers.items() if k[0] != "daphne" and k[1].label != labels[5]}

    stopped = tuning.successive_halving(spaces2, partial)
    assert stopped.dropped_after == {}
    assert any("round 1 stopped: 2 candidate(s) not measured" in c for c in stopped.cut)
    assert "daphne: no candidate measured before the budget ran out" in stopped.cut
    assert "daphne" not in stopped.best
    # rps per 100 MB: memory counts.
    standing = tuning.Standing(tuning.Candidate(1), [1000.0], [10.0], [200.0])
    assert standing.score("rps-per-100mb", None) == 500.0


# --- the guide's two comparisons --------------------------------------------------------


def test_the_guide_compares_equal_configurations_and_tuned_bests(tmp_path: Path) -> None:
    equal = resultfiles.write(
        tmp_path,
        "equal",
        [
            resultfiles.entry("uwsgi", "movies-sync", [300, 310, 305, 300]),
            resultfiles.entry("granian-wsgi", "movies-sync", [900, 910, 905, 900]),
        ],
    )
    text = guide.markdown(load_run(equal))
    assert "equal configuration" in text
    assert "Each server at its best (tuning)" in text and "Not measured in this run" in text

    tuned_entries = []
    for server, config, rps in (
        ("uwsgi", "workers=1,threads=1", [300, 310]),
        ("uwsgi", "workers=2,threads=32", [1000, 1010, 1005, 1000]),
        ("granian-wsgi", "workers=1,threads=4", [900, 910, 905, 900]),
    ):
        e = resultfiles.entry(server, "movies-sync", rps)
        e.config = config
        tuned_entries.append(e)
    document = resultfiles.document("tuned", tuned_entries)
    document.tuning = TuneRecord(
        objective="rps",
        budget_s=900,
        spent_s=120,
        candidates=[
            TuneCandidate(
                server="uwsgi",
                config="workers=1,threads=1",
                workers=1,
                threads=1,
                rounds=1,
                rps=[300],
                outcome="dropped",
                dropped_after=1,
            ),
            TuneCandidate(
                server="uwsgi",
                config="workers=2,threads=32",
                workers=2,
                threads=32,
                rounds=3,
                rps=[1000, 1010, 1005],
                outcome="best",
            ),
            TuneCandidate(
                server="granian-wsgi",
                config="workers=1,threads=4",
                workers=1,
                threads=4,
                rounds=2,
                rps=[900, 910],
                outcome="best",
            ),
        ],
        best={"uwsgi": "workers=2,threads=32", "granian-wsgi": "workers=1,threads=4"},
        skipped=["the budget (900 s) was spent: round 4 not run (uwsgi: 2 left)"],
    )
    path = tmp_path / "tuned.json"
    store.write_atomic(path, document)
    text = guide.markdown(load_run(path))
    assert "each at its best (tuned)" in text
    # Only each server's best is compared: uWSGI at its best wins, and says its layout.
    assert "**uwsgi{workers=2,threads=32}**" in text
    assert (
        "uwsgi{workers=1,threads=1}"
        not in text.split("## What each server")[0].split("Each server at its best")[0]
    )
    assert "`workers=2,threads=32` (3 round(s): 1,000, 1,010, 1,005 req/s" in text
    assert "workers=1,threads=1 (dropped after round 1, 300 req/s)" in text
    assert "Cut by the budget" in text
    # With confirmation rounds, bests are compared on them alone: the rounds that chose
    # uWSGI's best flattered it (1,000 req/s); fresh, it serves 800, below Granian's 900.
    uwsgi = next(e for e in document.results if e.config == "workers=2,threads=32")
    granian = next(e for e in document.results if e.server == "granian-wsgi")
    for entry, fresh in ((uwsgi, [800.0, 805.0, 795.0]), (granian, [900.0, 905.0, 895.0])):
        for i, rps in enumerate(fresh):
            entry.trials.append(resultfiles.trial(rps, round_index=4 + i))
    document.tuning.confirm_rounds = [4, 5, 6]
    store.write_atomic(path, document)
    text = guide.markdown(load_run(path))
    assert "**granian-wsgi{workers=1,threads=4}**, 900 req/s" in text


# --- live ---------------------------------------------------------------------------------


def test_bad_tuning_options_are_one_line(tmp_path: Path) -> None:
    for args, words in (
        (["--tune", "--objective", "speed"], "valid: rps, rps-per-100mb"),
        (["--tune", "--tune-budget", "soon"], "--tune-budget takes a duration"),
        (["--tune", "--config-from", "x"], "--tune .*: leave out --config-from"),
        (["--tune", "--proxy", "caddy"], "one deployment per server"),
        (["--config-from", str(tmp_path / "none.json")], "does not exist"),
        (["--workers", "many"], "auto or a whole number"),
    ):
        with pytest.raises(CommandError, match=words) as caught:
            call_command(
                "runbench", "--no-setup", "--servers", "gunicorn-sync", "--output",
                str(tmp_path), *args, stdout=StringIO(),
            )  # fmt: skip
        assert caught.value.returncode == 2


@pytest.mark.servers
def test_a_live_tuning_writes_configs_that_rerun_and_uwsgi_serves_every_connection(
    live_database: str, tmp_path: Path
) -> None:
    if connection.vendor != "sqlite":
        pytest.skip("independent of the database: run in the SQLite pass only")
    out = StringIO()
    # A search's losing layouts may be invalid (a finding of a completed run: exit 0).
    _tune(out, tmp_path)
    [path] = tmp_path.glob("*.json")
    _check_tuned(path, out, tmp_path)


def _tune(out: StringIO, tmp_path: Path) -> None:
    call_command(
        "runbench",
        "--tune",
        "--no-setup",
        "--servers",
        "uwsgi,gunicorn-sync",
        "--scenarios",
        "movies-sync",
        "--tune-budget",
        "65s",  # round 1 (nine candidates) took over 50 s on a slow day
        "--duration",
        "0.6",
        "--warmup",
        "0.2",
        "--ws-idle",
        "0",
        "--output",
        str(tmp_path),
        stdout=out,
    )


def _check_tuned(path: Path, out: StringIO, tmp_path: Path) -> None:
    document = store.load(path)
    record = document.tuning
    assert record is not None and set(record.best) == {"uwsgi", "gunicorn-sync"}
    assert record.spent_s <= 65 + 30  # no deployment starts past the budget
    assert {c.server for c in record.candidates} == {"uwsgi", "gunicorn-sync"}
    assert len(record.candidates) == len(tuning.space(SERVERS["uwsgi"].tuning, 1)) + len(
        tuning.space(SERVERS["gunicorn-sync"].tuning, 1)
    )
    # Behind its router every uWSGI layout serves every connection: none that was
    # measured failed for connections left unserved (the budget may leave some unrun).
    measured = [c for c in record.candidates if c.server == "uwsgi" and c.rps]
    assert measured and not [c for c in measured if c.why], record.candidates
    for server, file in record.files.items():
        data = json.loads(Path(file).read_text())
        assert data["server"] == server and data["config"] == record.best[server]
        assert (data["command"] and f"--workers {data['workers']}" in data["command"]) or (
            f"--processes {data['workers']}" in data["command"]
        )
    assert "Tuning: each server at its best" in out.getvalue()
    # --config-from reruns exactly those configurations.
    again = tmp_path / "again"
    # A pair invalid in the rerun is a finding (exit 0): on a noisy day uWSGI's best left
    # 13 of 477 requests hung (2.7%). This test is about the rerun's layouts and every
    # connection served, checked below; hung requests are reported, not hidden.
    _rerun(path, again)
    [rerun] = again.glob("*.json")
    entries = {e.server: e for e in store.load(rerun).results}
    assert {s: e.config for s, e in entries.items()} == record.best
    [trial] = entries["uwsgi"].trials
    # The search's own rule: a candidate that left connections unserved scores nothing.
    assert not left_unserved(trial), trial.warnings


def _rerun(path: Path, again: Path) -> None:
    call_command(
        "runbench",
        "--config-from",
        str(path),
        "--servers",
        "uwsgi,gunicorn-sync",
        "--scenarios",
        "movies-sync",
        "--trials",
        "1",
        # 2 s: a connection left unanswered that long is left unserved, not caught by
        # the scheduler in a short window (1 s windows saw 22 of 32 answered once).
        "--duration",
        "2",
        "--warmup",
        "0.5",
        "--no-setup",
        "--ws-idle",
        "0",
        "--output",
        str(again),
        stdout=StringIO(),
    )


def test_a_tuned_layout_is_written_in_each_servers_own_deploy_file(tmp_path: Path) -> None:
    import configparser
    import tomllib

    from djbench.plan.project import PACKAGED_DEPLOY
    from djbench.servers.entry import read_args

    knobs = {"worker_connections": "100", "runtime_threads": "2"}
    for name, spec in SERVERS.items():
        original = (PACKAGED_DEPLOY / spec.deploy_file).read_text()
        spec = SERVERS[name]
        text = spec.tuned_file(original, spec.tuned_settings(3, 8, knobs), "Tuned by a test")
        if spec.deploy_file.endswith(".toml"):
            assert tomllib.loads(text)["workers"] == 3
        elif spec.deploy_file.endswith(".ini"):
            parser = configparser.ConfigParser(strict=False, interpolation=None)
            parser.read_string(text)
            assert parser["uwsgi"]["processes"] == "3" and parser["uwsgi"]["threads"] == "8"
        elif spec.deploy_file.endswith(".py"):
            namespace: dict[str, object] = {}
            exec(
                compile(text, spec.deploy_file, "exec"), namespace
            )  # the file as gunicorn reads it
            assert namespace["workers"] == 3
            assert namespace["worker_class"] == {"gunicorn-sync": "sync"}.get(
                name, namespace["worker_class"]
            )
            if name == "gunicorn-gthread":
                assert namespace["threads"] == 8
            if name == "gunicorn-gevent":
                assert namespace["worker_connections"] == 100
        elif name != "daphne":
            path = tmp_path / f"{name}.args"
            path.write_text(text)
            args = read_args(path)
            last = len(args) - 1 - args[::-1].index("--workers")
            assert args[last + 1] == "3"


def _flag(argv: list[str], *names: str) -> str:
    """The value of the last of `names` in argv (a later flag wins, as in every server)."""
    found = [argv[i + 1] for i, a in enumerate(argv[:-1]) if a in names]
    assert found, (names, argv)
    return found[-1]


def test_every_tuned_file_of_a_shared_deploy_file_starts_the_measured_server(
    tmp_path: Path,
) -> None:
    """uvicorn and uvicorn-h11 share uvicorn.args; hypercorn and hypercorn-uvloop share
    hypercorn.toml; the Gunicorn workers share gunicorn.conf.py. Each tuned file must
    start the server that was measured, not its sibling."""
    import tomllib

    from djbench.plan.project import PACKAGED_DEPLOY
    from djbench.servers import LaunchConfig
    from djbench.servers.entry import read_args

    shared = {
        name: spec
        for name, spec in SERVERS.items()
        if sum(s.deploy_file == spec.deploy_file for s in SERVERS.values()) > 1
    }
    assert {"uvicorn", "uvicorn-h11", "hypercorn", "hypercorn-uvloop", "gunicorn-sync"} <= set(
        shared
    )
    for name, spec in shared.items():
        original = PACKAGED_DEPLOY / spec.deploy_file
        measured = spec.launch(
            LaunchConfig(
                host="127.0.0.1", port=8000, workers=2, threads=4,
                wsgi_app="sampleproject.wsgi:application",
                asgi_app="sampleproject.asgi:application", config_file=original,
            )
        ).argv  # fmt: skip
        spec = SERVERS[name]
        text = spec.tuned_file(original.read_text(), spec.tuned_settings(2, 4, {}), "t")
        tuned = tmp_path / f"{name}-{spec.deploy_file}"
        tuned.write_text(text)
        if spec.deploy_file.endswith(".args"):
            args = read_args(tuned)
            for flag in ("--loop", "--http"):
                assert _flag(args, flag) == _flag(measured, flag), (name, flag)
        elif spec.deploy_file.endswith(".toml"):
            assert tomllib.loads(text)["worker_class"] == _flag(measured, "--worker-class"), name
        else:
            namespace: dict[str, object] = {}
            exec(compile(text, spec.deploy_file, "exec"), namespace)
            assert namespace["worker_class"] == _flag(measured, "-k", "--worker-class"), name
