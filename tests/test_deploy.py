"""The deployment example in ``deploy/``: the Kubernetes manifest's probes reach real routes of
a running gateway, its settings file and environment name real settings, its shutdown timing
covers the drain; the Dockerfile builds the wheel in a stage of its own and runs unprivileged.
(No image is built: that needs a container engine.)"""

from __future__ import annotations

import re
import sys
from pathlib import Path
from typing import Any

import httpx
import yaml

import deepseek_recipe as dr
from deepseek_recipe.frontend import Frontend
from deepseek_recipe.gateway import Gateway, GatewaySettings
from tests.gateway_support import serving

if sys.version_info >= (3, 11):
    import tomllib
else:
    import tomli as tomllib

DEPLOY = Path(__file__).resolve().parents[1] / "deploy"


def _manifest() -> dict[str, dict[str, Any]]:
    documents = list(yaml.safe_load_all((DEPLOY / "kubernetes.yaml").read_text(encoding="utf-8")))
    by_kind = {document["kind"]: document for document in documents}
    assert sorted(by_kind) == ["ConfigMap", "Deployment", "Service"] and len(documents) == 3
    return by_kind


def _container(manifest: dict[str, dict[str, Any]]) -> dict[str, Any]:
    (container,) = manifest["Deployment"]["spec"]["template"]["spec"]["containers"]
    assert isinstance(container, dict)
    return container


def test_settings_file_and_environment_name_real_settings(tmp_path: Path) -> None:
    manifest = _manifest()
    text = manifest["ConfigMap"]["data"]["gateway.toml"]
    assert set(tomllib.loads(text)) <= set(GatewaySettings.model_fields)
    config = tmp_path / "gateway.toml"
    config.write_text(text, encoding="utf-8")
    settings = GatewaySettings(config=config)  # every value valid, too
    assert settings.backend == "completions"
    container = _container(manifest)
    for variable in container["env"]:
        name = re.fullmatch(r"DEEPSEEK_RECIPE_([A-Z_]+)", variable["name"])
        assert name is not None and name.group(1).lower() in GatewaySettings.model_fields, variable["name"]
    # The settings file is read where the ConfigMap is mounted.
    (mount,) = container["volumeMounts"]
    config_path = container["args"][container["args"].index("--config") + 1]
    assert Path(config_path).parent == Path(mount["mountPath"])
    (volume,) = manifest["Deployment"]["spec"]["template"]["spec"]["volumes"]
    assert volume["name"] == mount["name"] and volume["configMap"]["name"] == manifest["ConfigMap"]["metadata"]["name"]


def test_probes_reach_real_routes(tmp_path: Path, tokenizer: dr.Tokenizer) -> None:
    manifest = _manifest()
    container = _container(manifest)
    (port,) = container["ports"]
    probes = [container["livenessProbe"], container["readinessProbe"]]
    assert [probe["httpGet"]["path"] for probe in probes] == ["/health", "/ready"]
    for probe in probes:
        assert probe["httpGet"]["port"] in (port["name"], port["containerPort"])
    service_port = manifest["Service"]["spec"]["ports"][0]["targetPort"]
    assert service_port in (port["name"], port["containerPort"])
    assert manifest["Service"]["spec"]["selector"] == manifest["Deployment"]["spec"]["template"]["metadata"]["labels"]
    config = tmp_path / "gateway.toml"
    config.write_text(manifest["ConfigMap"]["data"]["gateway.toml"], encoding="utf-8")
    assert GatewaySettings(config=config).port == port["containerPort"]
    # The probes answer 200 on a gateway (the demo engine standing in for vLLM).
    gateway = Gateway(settings=GatewaySettings(log_requests=False), frontend=Frontend(tokenizer))
    with serving(gateway) as server:
        for probe in probes:
            assert httpx.get(server.url + probe["httpGet"]["path"]).status_code == 200


def test_shutdown_timing_covers_the_drain(tmp_path: Path) -> None:
    manifest = _manifest()
    pod = manifest["Deployment"]["spec"]["template"]["spec"]
    config = tmp_path / "gateway.toml"
    config.write_text(manifest["ConfigMap"]["data"]["gateway.toml"], encoding="utf-8")
    grace = GatewaySettings(config=config).shutdown_grace
    command = _container(manifest)["lifecycle"]["preStop"]["exec"]["command"]
    assert command[0] == "sleep"
    # preStop's sleep, then the drain, then the abort of what is left (a few seconds).
    assert pod["terminationGracePeriodSeconds"] >= int(command[1]) + grace + 5
    assert pod["securityContext"]["runAsNonRoot"] is True


def test_dockerfile_builds_the_wheel_and_runs_unprivileged() -> None:
    lines = [
        line.strip()
        for line in (DEPLOY / "Dockerfile").read_text(encoding="utf-8").splitlines()
        if line.strip() and not line.lstrip().startswith("#")
    ]
    stages = [line for line in lines if line.startswith("FROM ")]
    assert len(stages) == 2 and stages[0].endswith(" AS build")
    assert any("maturin build" in line for line in lines)
    assert any(line.startswith("COPY --from=build") for line in lines)
    user = [line for line in lines if line.startswith("USER ")][-1].split()[1].split(":")[0]
    assert user not in ("root", "0")
    assert lines[-1] == 'ENTRYPOINT ["deepseek-recipe", "serve"]'
    # The pod runs as the image's user.
    pod = _manifest()["Deployment"]["spec"]["template"]["spec"]
    assert str(pod["securityContext"]["runAsUser"]) == user
