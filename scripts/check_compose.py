"""Checks deploy/compose.replicas.yaml, which no container engine runs here: PostgreSQL, at
least two review-server replicas on one DATABASE_URL with a data volume each, a proxy that
sends to every replica, and image-server (docs/architecture.md, "Many replicas")."""
import sys

import yaml

path = sys.argv[1] if len(sys.argv) > 1 else "deploy/compose.replicas.yaml"
services = yaml.safe_load(open(path))["services"]
replicas = {
    name: s
    for name, s in services.items()
    if s.get("build", {}).get("dockerfile") == "deploy/review-server.Dockerfile"
}
problems = []
if "postgres" not in services:
    problems.append("no postgres service")
if len(replicas) < 2:
    problems.append(f"{len(replicas)} review-server replicas, want 2 or more")
urls = {s["environment"].get("DATABASE_URL") for s in replicas.values()}
if len(urls) != 1 or not next(iter(urls), "").startswith("postgres://"):
    problems.append(f"replicas do not share one PostgreSQL DATABASE_URL: {urls}")
volumes = [tuple(s.get("volumes", [])) for s in replicas.values()]
if len(set(volumes)) != len(volumes) or any(not v for v in volumes):
    problems.append("each replica needs a DATA_DIR volume of its own")
for name, s in replicas.items():
    if "postgres" not in s.get("depends_on", {}):
        problems.append(f"{name} does not wait for postgres")
proxy = " ".join(services.get("proxy", {}).get("command", []))
for name in replicas:
    if f"{name}:8080" not in proxy:
        problems.append(f"the proxy does not send to {name}")
if not any(
    s.get("build", {}).get("dockerfile") == "deploy/image-server.Dockerfile" for s in services.values()
):
    problems.append("no image-server")
if problems:
    sys.exit(f"{path}: " + "; ".join(problems))
print(f"{path}: postgres, {len(replicas)} review-server replicas behind the proxy, image-server")
