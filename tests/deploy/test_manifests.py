"""deploy/compose.yaml and deploy/kubernetes/attnviz.yaml hold together: they parse, every
ATTNVIZ_* name is a setting, the probes ask /healthz on the port the app listens on, and the
nginx template gets every variable it uses. (No cluster or Docker here: the files are read as
YAML, not applied.)"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml

from attnviz.settings import Settings

ROOT = Path(__file__).resolve().parents[2]
DEPLOY = ROOT / "deploy"
COMPOSE = DEPLOY / "compose.yaml"
MANIFEST = DEPLOY / "kubernetes" / "attnviz.yaml"
TEMPLATE = DEPLOY / "nginx" / "templates" / "default.conf.template"

SETTINGS = {f"ATTNVIZ_{name.upper()}" for name in Settings.model_fields}
# ATTNVIZ_* names commented out as examples ("# ATTNVIZ_MODELS: ..." or "# ATTNVIZ_MODELS ...").
COMMENTED = re.compile(r"#\s*(ATTNVIZ_[A-Z_]+)\b")


@pytest.fixture(scope="module")
def compose() -> dict:
    return yaml.safe_load(COMPOSE.read_text())


@pytest.fixture(scope="module")
def manifest() -> dict[str, dict]:
    docs = [d for d in yaml.safe_load_all(MANIFEST.read_text()) if d]
    kinds = [d["kind"] for d in docs]
    assert len(kinds) == len(set(kinds)), kinds
    return {d["kind"]: d for d in docs}


def test_the_template_is_given_every_variable_it_uses(compose):
    used = set(re.findall(r"\$\{?(ATTNVIZ_\w+)", TEMPLATE.read_text()))
    assert used == {"ATTNVIZ_PROXY_LISTEN", "ATTNVIZ_PROXY_UPSTREAM_1", "ATTNVIZ_PROXY_UPSTREAM_2"}
    nginx = compose["services"]["nginx"]
    env = nginx["environment"]
    assert used <= set(env)
    # Only these are substituted: the image's entrypoint keeps names matching the filter.
    assert all(re.search(env["NGINX_ENVSUBST_FILTER"], name) for name in used)
    assert not [n for n in env if n.startswith("ATTNVIZ_") and n not in used]
    # The template directory is mounted where the image renders templates from.
    source, target, *_ = nginx["volumes"][0].split(":")
    assert (COMPOSE.parent / source / TEMPLATE.name).is_file()
    assert target == "/etc/nginx/templates"


def test_compose_runs_two_replicas_of_the_image_behind_nginx(compose):
    services = compose["services"]
    replicas = {name: s for name, s in services.items() if name != "nginx"}
    assert sorted(replicas) == ["attnviz-1", "attnviz-2"]
    upstreams = {v for k, v in services["nginx"]["environment"].items() if "UPSTREAM" in k}
    for name, service in replicas.items():
        assert (COMPOSE.parent / service["build"]["context"] / "Dockerfile").is_file()
        assert service["restart"] == "unless-stopped"
        env = service["environment"]
        port = env["ATTNVIZ_PORT"]
        assert f"{name}:{port}" in upstreams
        assert port in service["expose"]
        health = " ".join(service["healthcheck"]["test"])
        assert f"http://127.0.0.1:{port}/healthz" in health
        assert services["nginx"]["depends_on"][name] == {"condition": "service_healthy"}
    assert services["nginx"]["restart"] == "unless-stopped"
    assert "/healthz" in " ".join(services["nginx"]["healthcheck"]["test"])


def test_every_attnviz_variable_is_a_setting(compose, manifest):
    named = set()
    for service in compose["services"].values():
        named |= {n for n in service.get("environment", {}) if not n.startswith("ATTNVIZ_PROXY_")}
    container = manifest["Deployment"]["spec"]["template"]["spec"]["containers"][0]
    named |= {e["name"] for e in container["env"]}
    named |= set(COMMENTED.findall(COMPOSE.read_text()))
    named |= set(COMMENTED.findall(MANIFEST.read_text()))
    named = {n for n in named if n.startswith("ATTNVIZ_")}
    assert named - SETTINGS == set()
    assert len(named) >= 10  # the useful ones are listed, set or commented


def test_kubernetes_probes_ask_healthz_on_the_apps_port(manifest):
    deployment = manifest["Deployment"]
    assert deployment["apiVersion"] == "apps/v1"
    assert deployment["spec"]["replicas"] == 2
    pod = deployment["spec"]["template"]["spec"]
    # A Service named attnviz would otherwise set ATTNVIZ_PORT=tcp://... in every pod.
    assert pod["enableServiceLinks"] is False
    (container,) = pod["containers"]
    env = {e["name"]: e.get("value") for e in container["env"]}
    ports = {p["name"]: p["containerPort"] for p in container["ports"]}
    assert ports == {"http": int(env["ATTNVIZ_PORT"])}
    for probe in ("startupProbe", "readinessProbe", "livenessProbe"):
        get = container[probe]["httpGet"]
        assert get["path"] == "/healthz"
        assert ports.get(get["port"], get["port"]) == ports["http"]
    # Liveness gives up later than readiness, and startup leaves time to load the model.
    live, ready = container["livenessProbe"], container["readinessProbe"]
    assert live["periodSeconds"] * live["failureThreshold"] > (
        ready["periodSeconds"] * ready["failureThreshold"]
    )
    start = container["startupProbe"]
    assert start["periodSeconds"] * start["failureThreshold"] >= 60


def test_kubernetes_pod_runs_unprivileged_on_a_read_only_root(manifest):
    pod = manifest["Deployment"]["spec"]["template"]["spec"]
    assert pod["securityContext"]["runAsNonRoot"] is True
    assert pod["securityContext"]["runAsUser"] == 10001  # the Dockerfile's user
    (container,) = pod["containers"]
    security = container["securityContext"]
    assert security["readOnlyRootFilesystem"] is True
    assert security["allowPrivilegeEscalation"] is False
    assert security["capabilities"]["drop"] == ["ALL"]
    mounts = {m["mountPath"]: m["name"] for m in container["volumeMounts"]}
    volumes = {v["name"]: v for v in pod["volumes"]}
    assert "emptyDir" in volumes[mounts["/tmp"]]
    resources = container["resources"]
    assert set(resources["requests"]) == set(resources["limits"]) == {"cpu", "memory"}
    assert any(e["name"] == "OMP_NUM_THREADS" for e in container["env"])


def test_kubernetes_service_autoscaler_and_budget_select_the_pods(manifest):
    deployment = manifest["Deployment"]
    labels = deployment["spec"]["template"]["metadata"]["labels"]
    assert deployment["spec"]["selector"]["matchLabels"].items() <= labels.items()
    service = manifest["Service"]
    assert service["spec"]["selector"].items() <= labels.items()
    (port,) = service["spec"]["ports"]
    assert port["targetPort"] == "http"
    hpa = manifest["HorizontalPodAutoscaler"]
    assert hpa["apiVersion"] == "autoscaling/v2"
    assert hpa["spec"]["scaleTargetRef"] == {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "name": deployment["metadata"]["name"],
    }
    assert 2 <= hpa["spec"]["minReplicas"] < hpa["spec"]["maxReplicas"]
    (metric,) = hpa["spec"]["metrics"]
    assert metric["resource"]["name"] == "cpu"
    budget = manifest["PodDisruptionBudget"]
    assert budget["spec"]["selector"]["matchLabels"].items() <= labels.items()
    assert set(manifest) == {
        "Deployment",
        "Service",
        "HorizontalPodAutoscaler",
        "PodDisruptionBudget",
        "PersistentVolumeClaim",  # the shared data directory (issue 27)
    }


def test_each_upstream_runs_as_the_replica_the_proxy_routes_runs_to(compose):
    """nginx sends a request about run "rN-..." to upstream N: the service behind
    ATTNVIZ_PROXY_UPSTREAM_N must run with ATTNVIZ_REPLICA=rN."""
    text = TEMPLATE.read_text()
    routes = dict(re.findall(r'"~\^(r\d+)-" (attnviz_r\d+);', text))
    assert routes == {"r1": "attnviz_r1", "r2": "attnviz_r2"}
    for name, upstream in routes.items():
        n = name.removeprefix("r")
        block = re.search(rf"upstream {upstream} {{(.*?)\n}}", text, re.S)
        assert block and f"${{ATTNVIZ_PROXY_UPSTREAM_{n}}}" in block.group(1)
        service = compose["services"]["nginx"]["environment"][f"ATTNVIZ_PROXY_UPSTREAM_{n}"]
        env = compose["services"][service.split(":")[0]]["environment"]
        assert env["ATTNVIZ_REPLICA"] == name
        Settings(replica=name)  # a valid name


def test_kubernetes_keeps_a_client_on_one_pod_for_its_runs(manifest):
    spec = manifest["Service"]["spec"]
    assert spec["sessionAffinity"] == "ClientIP"


DOCKERFILE = DEPLOY.parent / "Dockerfile"


def test_the_image_declares_its_data_directory_a_volume_writable_by_its_user():
    text = DOCKERFILE.read_text()
    env = re.search(r"^ENV ATTNVIZ_DATA_DIR=(\S+)$", text, re.M)
    assert env, "the Dockerfile sets ATTNVIZ_DATA_DIR"
    data = env.group(1)
    volume = re.search(r"^VOLUME \[\"([^\"]+)\"\]$", text, re.M)
    assert volume and volume.group(1) == data
    # Made the user's before it is declared (what a step after VOLUME changes there is lost).
    chown = text.index(f"chown 10001:10001 {data}")
    assert chown < volume.start() and text.index("USER 10001:10001") > chown


def test_compose_replicas_share_one_named_data_volume(compose):
    mounts = {}
    for name in ("attnviz-1", "attnviz-2"):
        service = compose["services"][name]
        (volume,) = service["volumes"]
        source, target = volume.split(":")[:2]
        mounts[name] = (source, target)
        assert target == "/data" and service["read_only"] is True
    assert len(set(mounts.values())) == 1  # one volume for both
    source = next(iter(mounts.values()))[0]
    assert source in compose["volumes"] and not source.startswith((".", "/"))


def test_kubernetes_pods_mount_a_read_write_many_claim_at_the_data_directory(manifest):
    pod = manifest["Deployment"]["spec"]["template"]["spec"]
    (container,) = pod["containers"]
    env = {e["name"]: e.get("value") for e in container["env"]}
    mounts = {m["mountPath"]: m["name"] for m in container["volumeMounts"]}
    volumes = {v["name"]: v for v in pod["volumes"]}
    data = env["ATTNVIZ_DATA_DIR"]
    claim = volumes[mounts[data]]["persistentVolumeClaim"]["claimName"]
    pvc = manifest["PersistentVolumeClaim"]
    assert pvc["metadata"]["name"] == claim
    assert pvc["spec"]["accessModes"] == ["ReadWriteMany"]
    assert pvc["spec"]["resources"]["requests"]["storage"]
    assert pod["securityContext"]["fsGroup"] == 10001  # the volume is the app's to write
