"""The jobs' dependency archive: the release table, pins, wheel-only resolution for every EMR target,
reproducible packing, the cache, and what the archive holds (and must not)."""
from __future__ import annotations

import os
import tarfile
from pathlib import Path

import pytest

from infra.deploy import job_deps
from infra.deploy.target import DeployError

REPO = Path(__file__).resolve().parents[3]


def test_release_labels_map_to_the_python_of_the_release():
    assert job_deps.target_for_release("emr-7.5.0-latest") == job_deps.DepsTarget("3.11", "x86_64")
    assert job_deps.target_for_release("emr-7.13.0-20260421", "arm64").machine == "aarch64"
    assert job_deps.target_for_release("emr-7.1.0-java11-latest").interpreter == "/usr/bin/python3.11"
    assert job_deps.release_of(job_deps.DEFAULT_RELEASE_LABEL) in job_deps.EMR_RELEASE_PYTHON


@pytest.mark.parametrize("label", ["emr-7.0.0-latest", "emr-6.15.0-latest", "7.5.0", "emr-7.5-latest"])
def test_an_unknown_release_label_is_refused_in_one_line_naming_the_known_ones(label):
    with pytest.raises(DeployError) as err:
        job_deps.target_for_release(label)
    message = str(err.value)
    assert message.startswith(f"--release-label {label}: not a release the jobs can run on (known: emr-7.1.0, ")
    assert "emr-7.13.0" in message and "\n" not in message


def test_an_unknown_architecture_is_refused():
    with pytest.raises(DeployError, match=r"--arch sparc: unknown CPU architecture \(known: x86_64, arm64\)"):
        job_deps.target_for_release("emr-7.5.0-latest", "sparc")


def test_platform_tags_cover_manylinux2014_up_to_al2023s_glibc():
    tags = job_deps.DepsTarget("3.11", "arm64").platforms
    assert tags[0] == "manylinux_2_34_aarch64" and "manylinux_2_17_aarch64" in tags
    assert tags[-1] == "manylinux2014_aarch64" and "manylinux_2_35_aarch64" not in tags


def test_pins_exclude_emrs_own_packages_and_agree_with_the_project_venv():
    pins = job_deps.read_pins(job_deps.REQUIREMENTS)
    assert not set(pins) & job_deps.PROVIDED_BY_EMR
    assert {"pyyaml", "great-expectations"} <= set(pins)
    project = {job_deps.normalize(name): version for name, _, version in
               (line.partition("==") for line in job_deps.PROJECT_PINS.read_text().splitlines()
                if "==" in line and not line.startswith("#"))}
    differing = {name: (version, project.get(name)) for name, version in pins.items() if project.get(name) != version}
    assert differing == {}, "the cluster would run other versions than the tests do"


@pytest.mark.parametrize("line, message", [
    ("pyspark==3.5.9", "pyspark must not be packed: EMR provides it"),
    ("py4j==0.10.9.9", "py4j must not be packed"),
    ("pyyaml>=6", "'pyyaml>=6' is not an exact pin"),
])
def test_bad_pins_are_refused(tmp_path, line, message):
    path = tmp_path / "req.txt"
    path.write_text(f"# header\nnumpy==2.4.6\n{line}\n")
    with pytest.raises(DeployError, match=f"req.txt:3: .*{message}"):
        job_deps.read_pins(path)


def _dist_info(tree: Path, name: str, version: str) -> None:
    info = tree / f"{name}-{version}.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n\nbody\n")


def test_what_pip_installed_must_be_exactly_pinned_and_never_pyspark(tmp_path):
    _dist_info(tmp_path / "ok", "PyYAML", "6.0.3")
    assert job_deps.check_installed(tmp_path / "ok", {"pyyaml": "6.0.3"}) == ("pyyaml==6.0.3",)
    _dist_info(tmp_path / "extra", "PyYAML", "6.0.3")
    _dist_info(tmp_path / "extra", "tomli", "2.0.1")
    with pytest.raises(DeployError, match="pip installed tomli==2.0.1, which requirements/emr-job.txt does not pin"):
        job_deps.check_installed(tmp_path / "extra", {"pyyaml": "6.0.3"})
    _dist_info(tmp_path / "spark", "pyspark", "3.5.9")
    with pytest.raises(DeployError, match="pyspark ended up in the archive; EMR provides them"):
        job_deps.check_installed(tmp_path / "spark", {"pyspark": "3.5.9"})


def test_packing_is_reproducible(tmp_path):
    """Same files, same bytes: whatever the timestamps, creation order or owner's umask."""
    def tree(root: Path, order: list[str], mtime: int) -> Path:
        for name in order:
            path = root / name
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(f"content of {name}\n")
            os.utime(path, (mtime, mtime))
        (root / "pkg" / "_native.so").chmod(0o775)
        return root

    names = ["pkg/__init__.py", "pkg/_native.so", "pkg/sub/mod.py", "other.py"]
    first, second = tmp_path / "a.tar.gz", tmp_path / "b.tar.gz"
    job_deps.pack(tree(tmp_path / "t1", names, 1_600_000_000), first)
    job_deps.pack(tree(tmp_path / "t2", list(reversed(names)), 1_900_000_000), second)
    assert first.read_bytes() == second.read_bytes()
    with tarfile.open(first) as archive:
        members = {m.name: m for m in archive.getmembers()}
    assert list(members) == sorted(members)
    assert members["pkg/_native.so"].mode == 0o755 and members["pkg/__init__.py"].mode == 0o644
    assert {(m.mtime, m.uid, m.gid, m.uname) for m in members.values()} == {(job_deps.ARCHIVE_EPOCH, 0, 0, "")}


def test_a_killed_builds_leftovers_are_removed_once_no_build_can_use_them(tmp_path):
    stale, fresh = tmp_path / ".build-stale", tmp_path / ".build-fresh"
    for folder in (stale, fresh):
        (folder / "tree").mkdir(parents=True)
    old = 1_600_000_000
    os.utime(stale, (old, old))
    job_deps._remove_stale_builds(tmp_path, older_than=2 * job_deps.PIP_TIMEOUT_SECONDS)
    assert not stale.exists() and fresh.is_dir()


@pytest.mark.integration
@pytest.mark.timeout(300)
@pytest.mark.parametrize("arch", sorted(job_deps.ARCHITECTURES))
def test_every_emr_target_resolves_from_wheels_alone_to_exactly_the_pins(arch):
    target = job_deps.target_for_release(job_deps.DEFAULT_RELEASE_LABEL, arch)
    resolved = job_deps.resolve(target, ["-r", str(job_deps.REQUIREMENTS)])
    assert all(r.filename.endswith(".whl") for r in resolved), [r.filename for r in resolved]
    compiled = [r.filename for r in resolved if "manylinux" in r.filename]
    assert compiled and all(target.machine in name for name in compiled)
    assert {r.name for r in resolved}.isdisjoint(job_deps.PROVIDED_BY_EMR)
    assert {r.name: r.version for r in resolved} == job_deps.read_pins(job_deps.REQUIREMENTS)


@pytest.mark.integration
@pytest.mark.timeout(300)
def test_emr_job_txt_is_what_the_lock_resolves_now():
    """requirements/emr-job.txt is current: emr-job.in under the project's pins resolves to it."""
    args = ["-c", str(job_deps.PROJECT_PINS), "-r", str(job_deps.REQUIREMENTS_IN)]
    resolved = job_deps.resolve(job_deps.target_for_release(job_deps.DEFAULT_RELEASE_LABEL), args)
    assert {r.name: r.version for r in resolved} == job_deps.read_pins(job_deps.REQUIREMENTS), \
        "re-run `python -m infra.deploy.job_deps lock`"


@pytest.mark.integration
@pytest.mark.timeout(900)
def test_the_archive_holds_the_pinned_packages_and_not_emrs(job_deps_archive):
    deps = job_deps_archive
    assert deps.path.name == job_deps.ARCHIVE_NAME and deps.key == f"artifacts/job_deps/{deps.version}/job_deps.tar.gz"
    pins = job_deps.read_pins(job_deps.REQUIREMENTS)
    assert dict(p.split("==") for p in deps.packages) == pins
    with tarfile.open(deps.path) as archive:
        names = archive.getnames()
    tops = {name.split("/", 1)[0] for name in names}
    assert {"yaml", "great_expectations", "numpy", "pandas"} <= tops
    assert not {"pyspark", "py4j", "bin"} & tops
    assert not [n for n in tops if n.startswith(("pyspark-", "py4j-"))]
    assert any(name.endswith(".so") for name in names)  # compiled modules: what --py-files cannot carry
    assert not [n for n in names if n.endswith((".pyc", "/RECORD")) or "__pycache__" in n]


@pytest.mark.integration
@pytest.mark.timeout(900)
def test_unchanged_inputs_reuse_the_cache_and_other_inputs_get_another_version(job_deps_archive, tmp_path):
    again = job_deps.build_job_deps(job_deps_archive.target)
    assert again.cached and (again.version, again.sha256) == (job_deps_archive.version, job_deps_archive.sha256)
    changed = tmp_path / "emr-job.txt"
    changed.write_text(job_deps.REQUIREMENTS.read_text() + "# a comment changes the input hash\n")
    assert job_deps.input_version(job_deps_archive.target, changed.read_bytes()) != job_deps_archive.version
    arm = job_deps.target_for_release(job_deps.DEFAULT_RELEASE_LABEL, "arm64")
    assert job_deps.input_version(arm, job_deps.REQUIREMENTS.read_bytes()) != job_deps_archive.version


def test_the_dockerfile_builds_on_the_default_release_for_the_requests_interpreter():
    """The custom-image alternative (not buildable here: no Docker engine) installs the same pins into the
    interpreter the requests name, on the default release's base image."""
    dockerfile = (REPO / "infra" / "deploy" / "Dockerfile").read_text()
    target = job_deps.target_for_release(job_deps.DEFAULT_RELEASE_LABEL)
    release = job_deps.release_of(job_deps.DEFAULT_RELEASE_LABEL)
    assert f"ARG BASE_IMAGE=public.ecr.aws/emr-on-eks/spark/{release}:latest" in dockerfile
    assert f"ARG PYTHON={Path(target.interpreter).name}" in dockerfile
    assert "COPY requirements/emr-job.txt" in dockerfile and "-r /tmp/emr-job.txt" in dockerfile
    assert "USER hadoop:hadoop" in dockerfile.splitlines()[-1]
