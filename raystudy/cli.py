"""``raystudy``: parse the command line and hand over to the platform.

Errors a user can cause end with one line on stderr and exit code 2.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from raystudy.contract.data import bounded as _number
from raystudy.errors import Interrupted, UserError

PLACEMENT_TIMEOUT_S = 120.0


class _Version(argparse.Action):
    """``--version``: raystudy's; with ``-v`` before it, ray's, torch's and Python's too."""

    def __call__(self, parser, namespace, values, option_string=None) -> None:
        from raystudy._version import __version__

        lines = [f"raystudy {__version__}"]
        seen = getattr(parser, "argv_seen", None)
        argv = sys.argv[1:] if seen is None else seen
        if getattr(namespace, "verbose_version", False) or {"-v", "--verbose"} & set(argv):
            import platform
            from importlib.metadata import PackageNotFoundError, version

            for dist in ("ray", "torch"):
                try:
                    lines.append(f"{dist} {version(dist)}")
                except PackageNotFoundError:
                    lines.append(f"{dist} not installed")
            lines.append(f"python {platform.python_version()} ({sys.executable})")
        sys.stdout.write("\n".join(lines) + "\n")
        parser.exit(0)


class _StudyHelp(argparse.Action):
    """``raystudy run STUDY --help``: the generic flags, then the study's config keys."""

    def __call__(self, parser, namespace, values, option_string=None) -> None:
        study = getattr(namespace, "study", None)
        if study:
            try:
                from raystudy.platform.configuration.registry import get_study
                from raystudy.platform.configuration.show import describe_study, keys_text

                info = describe_study(get_study(study))
                parser.epilog = (f"config keys of {info['name']} (--set KEY=VALUE; type = "
                                 f"default; `raystudy show {study}` for profiles and spaces):"
                                 f"\n{keys_text(info)}")
                parser.formatter_class = argparse.RawDescriptionHelpFormatter
            except UserError as exc:
                parser.print_help()
                parser.exit(2, f"raystudy: error: {_one_line(str(exc))}\n")
        parser.print_help()
        parser.exit()


class Parser(argparse.ArgumentParser):
    """argparse, but a usage error is one line (``raystudy: error: ...``) and exit 2."""

    argv_seen: list[str] | None = None   # what parse_args was given (``--version -v`` reads it)

    def parse_known_args(self, args=None, namespace=None):  # type: ignore[override]
        self.argv_seen = None if args is None else list(args)
        return super().parse_known_args(args, namespace)

    def error(self, message: str) -> None:  # type: ignore[override]
        self.exit(2, f"raystudy: error: {message} (see `{self.prog} --help`)\n")


def _add_compute(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group("compute")
    group.add_argument("--workers", type=_number(int, 0), default=0,
                       help="Ray Train workers per trial (0: the loop runs in the trial itself)")
    group.add_argument("--cpus-per-worker", type=_number(float, 0), default=1.0)
    group.add_argument("--gpus-per-worker", type=_number(float, 0), default=0.0)
    group.add_argument("--map-tasks", type=_number(int, 0), default=0,
                       help="Ray tasks each trial reserves for its parallel work (ctx.map: "
                       "evaluation episodes, E-step shards); 0 runs that work in the trial")
    group.add_argument("--cpus-per-map-task", type=_number(float, 0), default=1.0)
    group.add_argument("--address", default=None,
                       help="Ray cluster to attach to (default: RAY_ADDRESS, else a cluster "
                       "`raystudy cluster start` runs here, else embedded Ray; 'local': "
                       "embedded Ray)")
    group.add_argument("--connect-timeout", type=_number(float, 0.1), default=10.0,
                       metavar="S", help="seconds the cluster may take to answer (default 10)")
    group.add_argument("--placement-timeout", type=_number(float, 1), default=PLACEMENT_TIMEOUT_S,
                       metavar="S", help="attached: seconds trials may wait with no node able "
                       "to hold them and none being added, before the run stops (default 120)")
    group.add_argument("--cluster-config", default=None, metavar="FILE",
                       help="attached: a cluster-launcher YAML naming the node types the "
                       "autoscaler can add, where the cluster does not say (e.g. under KubeRay)")
    group.add_argument("--storage", default="runs",
                       help="where run folders go: a local path or s3://, gs:// (S3-compatible "
                       "stores: s3://bucket/runs?endpoint_override=http://HOST:PORT&region=R; "
                       "default ./runs)")
    group.add_argument("--name", default=None, help="run folder name (default STUDY-KIND-time)")


def _add_study_args(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("-h", "--help", action=_StudyHelp, nargs=0,
                        help="show this help (after STUDY: with the study's config keys)")
    parser.add_argument("study", help="a study name (see `raystudy list`) or a study file, "
                        "path/to/my_study.py")
    parser.add_argument("--profile", default="quick",
                        help="quick (minutes on 2 CPUs) | paper | a YAML file")
    parser.add_argument("--set", dest="overrides", action="append", default=[],
                        metavar="KEY=VALUE", help="override a config field, e.g. optimizer.lr=0.01")
    parser.add_argument("--verbose", action="store_true",
                        help="also show Ray's and Tune's own output (trial tables) on the "
                        "terminal; it always goes to the run folder's logs/driver.log")
    parser.add_argument("--mlflow", nargs="?", const="default", default="", metavar="URI",
                        help="also log every trial to MLflow: one experiment per study, one "
                        "MLflow run per trial, the report as an artifact (default store: "
                        "file:STORAGE/mlruns, shared by the runs under --storage; needs "
                        "mlflow)")
    parser.add_argument("--optuna-storage", default=None, metavar="URL",
                        help="database of the live optuna-dashboard study: a SQLAlchemy URL "
                        "(default sqlite in the run folder; 'off' for none)")
    _add_compute(parser)


def build_parser(data_commands: dict[str, tuple[str, Any]] | None = None
                 ) -> argparse.ArgumentParser:
    """The whole command line; ``data_commands`` (``registry.data_commands()``) fill
    ``raystudy data``, which only ``main`` reads when the command is ``data``."""
    parser = Parser(
        prog="raystudy", description="Run machine-learning studies on Ray: local or cluster."
    )
    parser.add_argument("--version", action=_Version, nargs=0,
                        help="print raystudy's version (with -v: ray's, torch's, Python's)")
    parser.add_argument("-v", "--verbose", action="store_true", dest="verbose_version",
                        help=argparse.SUPPRESS)
    sub = parser.add_subparsers(dest="command", required=True)

    sub.add_parser("list", help="list the studies (and where each comes from)")
    show = sub.add_parser("show", help="what a study accepts: config keys (type, default, "
                          "profile values, docs), profiles, spaces, data commands")
    show.add_argument("study", help="a study name (see `raystudy list`) or a study file")
    show.add_argument("--json", action="store_true", help="the same as JSON, for tools")
    cp = sub.add_parser("cp", help="copy a study's package (config, recipe, analysis, data, "
                        "profiles, spaces) into DEST/NAME, to start a variant: then "
                        "`raystudy run DEST/NAME`")
    cp.add_argument("study", help="a registered study, e.g. optimizer_robustness")
    cp.add_argument("dest", help="folder to copy into (created; must not hold the files)")
    cp.add_argument("--name", default=None,
                    help="the copy's study name (default: my_STUDY)")

    run = sub.add_parser("run", help="one training run of a study", add_help=False)
    _add_study_args(run)
    run.add_argument("--resume", action="store_true", help="resume the run named by --name")
    run.add_argument("--in-process", action="store_true",
                     help="run the loop in this process, without Ray or Tune: a debugging run "
                     "in seconds where breakpoint(), pdb and profilers work; the same run "
                     "folder (report, --resume, dashboard)")

    sweep = sub.add_parser("sweep", help="a Ray Tune sweep over a search space",
                           add_help=False)
    _add_study_args(sweep)
    sweep.add_argument("--space", default=None,
                       help="search space: a shipped name or a YAML file (default: profile's)")
    sweep.add_argument("--search", default="grid", help="grid | random | optuna")
    sweep.add_argument("--scheduler", default="fifo", help="fifo | asha")
    sweep.add_argument("--samples", type=_number(int, 1), default=1,
                       help="samples per grid point (random/optuna: trials)")
    sweep.add_argument("--max-concurrent", type=_number(int, 1), default=None)
    sweep.add_argument("--seed", type=_number(int, 0), default=0,
                       help="seed of the search algorithm")
    sweep.add_argument("--trial-retries", type=_number(int, 0, 100), default=0,
                       help="times Tune retries a trial that raised (0-100)")
    sweep.add_argument("--resume", action="store_true",
                       help="finish an interrupted sweep (--name, else the newest unfinished)")

    report = sub.add_parser("report", help="tables, figures and report.md/html of a run folder")
    report.add_argument("run_dir", help="a run folder, or its URI on object storage "
                        "(s3://bucket/runs/NAME?endpoint_override=...)")
    report.add_argument("--out", default=None,
                        help="write the report here instead of into RUN_DIR (e.g. read-only)")
    report.add_argument("--page", default=None, metavar="DOCS_PAGE",
                        help="also write the run's results section into a study's page "
                        "(docs/STUDY.md), in place of the one generated before")
    report.add_argument("--with", dest="with_runs", action="append", default=[],
                        metavar="RUN", help="read this run's trials too (same study; "
                        "repeatable): seeds or an arm run later, a selection run beside "
                        "the claims it fixes; needs --out")

    compare = sub.add_parser("compare", help="runs of one study side by side: claims, the "
                             "primary metric per configuration, what differs (one page)")
    compare.add_argument("runs", nargs="+", metavar="RUN",
                         help="two or more run folders (or object-storage URIs)")
    compare.add_argument("--out", default=None,
                         help="folder for compare.md/html (default: compare-TIME beside the "
                         "first run)")

    dashboard = sub.add_parser("dashboard", help="optuna-dashboard on a run's database")
    dashboard.add_argument("run_dir", nargs="?", default=None,
                           help="a run folder: the database its sweep mirrored into")
    dashboard.add_argument("--optuna-storage", default=None, metavar="URL",
                           help="a database URL instead of RUN_DIR (every study in it), e.g. "
                           "the postgresql:// URL the sweeps were given")
    dashboard.add_argument("--port", type=_number(int, 1, 65535), default=8080)
    dashboard.add_argument("--host", default="127.0.0.1",
                           help="address to serve on (0.0.0.0: reachable from other hosts)")

    _add_data_commands(sub, data_commands)
    _add_jobs_commands(sub)
    _add_cluster_commands(sub)
    return parser


def _add_data_commands(sub: argparse._SubParsersAction,
                       commands: dict[str, tuple[str, Any]] | None) -> None:
    """``raystudy data NAME``: the commands the registered studies contribute."""
    data = sub.add_parser("data", help="make or inspect a study's datasets (each study "
                          "contributes its own: `raystudy data --help`)")
    data_sub = data.add_subparsers(dest="data_command", required=True, metavar="NAME")
    for name, (study, command) in sorted((commands or {}).items()):
        parser = data_sub.add_parser(name, help=f"{command.help} [{study}]",
                                     description=f"{command.help} (study {study})")
        command.add_arguments(parser)


def _add_jobs_commands(sub: argparse._SubParsersAction) -> None:
    address = {"default": None, "help": "dashboard URL of the cluster, e.g. http://head:8265 "
               "(default: RAY_API_SERVER_ADDRESS, RAY_ADDRESS, else http://127.0.0.1:8265)"}
    submit = sub.add_parser("submit", help="run a command on a Ray cluster as a Ray Job",
                            usage="raystudy submit [options] -- raystudy sweep STUDY ...")
    submit.add_argument("--address", **address)
    submit.add_argument("--working-dir", default=".",
                        help="folder shipped to the cluster (without runs/, data/, .venv/, .git)")
    submit.add_argument("--pip", nargs="+", action="extend", default=[], metavar="PKG",
                        help="extra pip packages installed for the job")
    submit.add_argument("--env", action="append", default=[], metavar="KEY=VALUE",
                        help="environment variable of the job")
    submit.add_argument("--job-id", default=None, help="submission id (default: generated)")
    submit.add_argument("entrypoint", nargs=argparse.REMAINDER,
                        help="-- then the command, e.g. -- raystudy sweep optimizer_robustness")
    jobs = sub.add_parser("jobs", help="list, inspect, follow or stop Ray Jobs")
    jobs_sub = jobs.add_subparsers(dest="jobs_command", required=True)
    listing = jobs_sub.add_parser("list", help="every job of the cluster")
    listing.add_argument("--address", **address)
    for name, text in (("status", "status of a job"), ("logs", "a job's output"),
                       ("stop", "stop a running job"), ("wait", "block until a job ends")):
        cmd = jobs_sub.add_parser(name, help=text)
        cmd.add_argument("job_id")
        cmd.add_argument("--address", **address)
        if name == "logs":
            cmd.add_argument("--follow", action="store_true", help="stream until the job ends")


def _add_cluster_commands(sub: argparse._SubParsersAction) -> None:
    cluster = sub.add_parser("cluster", help="a multi-node Ray cluster on this machine, to "
                             "rehearse a cluster run (see clusters/README.md)")
    verbs = cluster.add_subparsers(dest="cluster_command", required=True)
    start = verbs.add_parser("start", help="start a head and worker nodes (or an autoscaler)")
    start.add_argument("--workers", type=_number(int, 0), default=0,
                       help="static worker nodes beside the head (default 0)")
    start.add_argument("--cpus-per-worker", type=_number(float, 0), default=1.0,
                       help="CPUs of each static worker node (default 1)")
    start.add_argument("--autoscale", default=None, metavar="FILE",
                       help="node types (a cluster-launcher YAML such as "
                       "clusters/local-autoscale.yaml) for Ray's fake autoscaler")
    start.add_argument("--head-cpus", type=_number(float, 0), default=None,
                       help="CPUs of the head (default: all cores; 0 with --autoscale)")
    for verb in (start, verbs.add_parser("stop", help="end exactly what start started"),
                 verbs.add_parser("status", help="is it up, and where")):
        verb.add_argument("--dir", default=None, help="the cluster's state, logs and Ray temp "
                          "folder (default RAYSTUDY_CLUSTER_DIR, else /tmp/raystudy-cluster)")


def _cluster(args: argparse.Namespace) -> int:
    from raystudy.platform.cluster import localcluster
    spec = localcluster.ClusterSpec()
    if args.dir:
        spec.dir = Path(args.dir)
    if args.cluster_command == "start":
        spec.workers, spec.cpus_per_worker = args.workers, args.cpus_per_worker
        spec.autoscale = Path(args.autoscale) if args.autoscale else None
        if args.head_cpus is not None:  # else NUM_CPUS, as local-cluster.sh documents
            spec.head_cpus = args.head_cpus
        state = localcluster.start(spec)
        print(f"raystudy: local cluster up: {localcluster.describe(state)}")
        print(f"  attach:  raystudy sweep STUDY --address {state['address']}")
        print(f"  jobs:    export RAY_API_SERVER_ADDRESS={state['dashboard']} RAY_AUTH_MODE=token")
        return 0
    if args.cluster_command == "stop":
        stopped = localcluster.stop(spec.dir)
        print(f"raystudy: stopped the cluster started from {spec.dir}" if stopped
              else f"raystudy: no cluster was started from {spec.dir}")
        return 0
    state = localcluster.running(spec.dir)
    if state is None:
        print(f"raystudy: no local cluster runs from {spec.dir}")
        return 1
    print(f"raystudy: running: {localcluster.describe(state)}")
    return 0


def _jobs(args: argparse.Namespace) -> int:
    from raystudy.platform.cluster import jobs
    if args.command == "submit":
        jobs.submit(args.entrypoint, args.address, args.working_dir, args.pip, args.env,
                    args.job_id)
        return 0
    if args.jobs_command == "list":
        jobs.list_jobs(args.address)
    elif args.jobs_command == "status":
        jobs.status(args.job_id, args.address)
    elif args.jobs_command == "logs":
        final = jobs.logs(args.job_id, args.address, args.follow)
        return 0 if final in (None, "SUCCEEDED") else 1
    elif args.jobs_command == "stop":
        jobs.stop(args.job_id, args.address)
    elif args.jobs_command == "wait":
        final = jobs.wait(args.job_id, args.address)
        print(f"{args.job_id}: {final}")
        return 0 if final == "SUCCEEDED" else 1
    return 0


def _exit_code(run_dir) -> int:
    """1 when any trial errored (a diverged trial is a result, not an error), naming the
    error files; else 0."""
    from raystudy.contract import storage
    from raystudy.platform.runs.rundir import read_summary

    summary = read_summary(run_dir)
    if summary is None:
        return 0
    failed = [t for t in summary.get("trials", []) if t.get("status") == "error"]
    if not failed and summary["counts"].get("error"):
        failed = [{"error_file": None}] * summary["counts"]["error"]
    if not failed:
        return 0
    files = [storage.join(str(run_dir), t["error_file"]) for t in failed if t.get("error_file")]
    shown = ", ".join(files[:3]) + (f" and {len(files) - 3} more" if len(files) > 3 else "")
    total = sum(summary["counts"].values())
    print(f"raystudy: {len(failed)} of {total} trial(s) failed"
          + (f"; errors in {shown}" if shown else "; the errors are listed in the report"),
          file=sys.stderr)
    return 1


def _request(args: argparse.Namespace, kind: str):
    from raystudy.platform.configuration.config import parse_set_args
    from raystudy.platform.execution.request import Request
    from raystudy.platform.execution.trainable import Compute

    compute = Compute(workers=args.workers, cpus_per_worker=args.cpus_per_worker,
                      gpus_per_worker=args.gpus_per_worker, map_tasks=args.map_tasks,
                      cpus_per_map_task=args.cpus_per_map_task)
    study = args.study
    if study.endswith(".py"):  # a study file: saved absolute, so --resume finds it anywhere
        study = str(Path(study).expanduser().resolve())
    request = Request(kind=kind, study=study, profile=args.profile,
                      overrides=parse_set_args(args.overrides), compute=compute,
                      storage=args.storage, name=args.name)
    request.mlflow = args.mlflow
    request.in_process = getattr(args, "in_process", False)
    request.argv = list(getattr(args, "argv", []))
    request.optuna_storage = args.optuna_storage
    if kind == "sweep":
        request.space = args.space
        request.search = args.search
        request.scheduler = args.scheduler
        request.samples = args.samples
        request.max_concurrent = args.max_concurrent
        request.seed = args.seed
        request.trial_max_failures = args.trial_retries
    return request


def _list_studies() -> int:
    """One line per study: name, origin, description; a broken plugin is one line too."""
    from raystudy.platform.configuration.registry import describe, entries

    for entry in entries():
        try:
            text = describe(entry)
        except Exception as exc:  # a third-party plugin may fail any way: name it, go on
            text = f"BROKEN: {entry.target} does not import ({type(exc).__name__}: {exc})"
        print(f"{entry.name:24s} [{entry.origin}] {_one_line(text)}")
    return 0


def dispatch(args: argparse.Namespace) -> int:
    if args.command == "list":
        return _list_studies()
    if args.command == "show":
        from raystudy.platform.configuration.registry import get_study
        from raystudy.platform.configuration.show import show

        sys.stdout.write(show(get_study(args.study), as_json=args.json))
        return 0
    if args.command == "cp":
        from raystudy.platform.configuration.copystudy import copy_study, study_argument

        package = copy_study(args.study, args.dest, args.name)
        print(f"raystudy: copied {args.study} to {package}/; run it with "
              f"`raystudy run {study_argument(package)}`")
        return 0
    if args.command in ("run", "sweep"):
        from raystudy.platform.execution.session import find_local_cluster

        in_process = getattr(args, "in_process", False)
        if in_process:
            from raystudy.platform.execution.inprocess import refuse_ray_options

            refuse_ray_options({
                "--workers": args.workers, "--address": args.address, "--mlflow": args.mlflow,
                "--gpus-per-worker": args.gpus_per_worker,
                "--cluster-config": args.cluster_config,
                "--placement-timeout": args.placement_timeout != PLACEMENT_TIMEOUT_S})
        address = None if in_process else find_local_cluster(args.address)
        from raystudy.platform.execution.runner import execute

        run_dir = execute(_request(args, args.command), resume=args.resume,
                          address=address, connect_timeout_s=args.connect_timeout,
                          placement_timeout_s=args.placement_timeout,
                          cluster_config=args.cluster_config, verbose=args.verbose)
        return _exit_code(run_dir)
    if args.command == "report":
        from raystudy.platform.report.report import write_report_at

        written = write_report_at(args.run_dir, out_dir=args.out, docs_page=args.page,
                                  with_runs=args.with_runs)
        print(f"raystudy: report written to {written}"
              + (f"; results section written into {args.page}" if args.page else ""))
        return 0
    if args.command == "compare":
        from raystudy.platform.report.compare import compare

        page = compare(args.runs, args.out)
        print(f"raystudy: compared {len(args.runs)} runs: {page} (and compare.html)")
        return 0
    if args.command == "dashboard":
        from raystudy.platform.tracking.dashboard import serve

        serve(args.run_dir, args.port, args.host, url=args.optuna_storage)
        return 0
    if args.command == "data":
        from raystudy.platform.configuration.registry import data_commands

        _, command = data_commands()[args.data_command]
        print(f"raystudy: {command.run(args)}")
        return 0
    if args.command in ("submit", "jobs"):
        return _jobs(args)
    if args.command == "cluster":
        return _cluster(args)
    raise UserError(f"unknown command {args.command}")


def main(argv: Sequence[str] | None = None) -> int:
    """Exit codes: 0 done, 1 a trial failed, 2 a user error (one line), 130 Ctrl-C."""
    from raystudy.contract.data import describe_os_error, is_user_os_error

    argv = list(sys.argv[1:] if argv is None else argv)
    commands = None
    if argv[:1] == ["data"]:
        from raystudy.platform.configuration.registry import data_commands

        commands = data_commands()
    args = build_parser(commands).parse_args(argv)
    args.argv = argv
    try:
        return dispatch(args)
    except UserError as exc:
        print(f"raystudy: error: {_one_line(str(exc))}", file=sys.stderr)
        return 2
    except OSError as exc:
        if not is_user_os_error(exc):
            raise
        print(f"raystudy: error: {describe_os_error(exc, 'access')}", file=sys.stderr)
        return 2
    except (KeyboardInterrupt, Interrupted) as exc:
        print(f"raystudy: {_interrupt_line(exc)}", file=sys.stderr)
        return 130


def _one_line(text: str) -> str:
    return " ".join(text.split())


def _interrupt_line(exc: BaseException) -> str:
    command = getattr(exc, "command", "")
    message = str(exc) or "interrupted"
    return f"{message}; resume with `{command}`" if command else message
