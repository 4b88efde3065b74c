#!/usr/bin/env python3
"""Checks the Kubernetes manifests under deploy/k8s without a cluster.

Every kustomization (deploy/k8s/base and each deploy/k8s/overlays/NAME) is
rendered by the real tool, `kubectl kustomize`, and then:
  - yamllint (Debian's package; config deploy/k8s/.yamllint) lints the
    sources;
  - each rendered object is validated against the upstream Kubernetes API
    schemas by kubernetes-models (npm, pinned in scripts/k8s-schema;
    scripts/k8s-schema/validate.mjs);
  - on the rendered objects, the checks that are this project's own: every
    workload container
      has each $(VAR) its args use among its env;
      reads each secretKeyRef from a Secret of the build that has that key;
      mounts only declared volumes, whose ConfigMap/Secret (and Secret
      items) the build holds;
      finds the files its flags name (--config, --store-password-file, TLS,
      token) under one of its mounts;
    and the dflash-evald container has a readiness probe.

Needs kubectl >= 1.21 (kustomize v4 or later), yamllint, node with
`npm ci --prefix scripts/k8s-schema` done (scripts/install-deps.sh does the
last two), and python3-yaml. A missing tool is a failure, not a skip.

Usage: check_k8s.py [DEPLOY_K8S_DIR]    (default: the repo's deploy/k8s)
       check_k8s.py --selftest          (breaks a copy; each defect is caught)
Exit 0 when clean; 1 with one line per problem.
"""
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

import yaml

HERE = os.path.dirname(os.path.abspath(__file__))
SCHEMA_DIR = os.path.join(HERE, "k8s-schema")
FILE_FLAGS = ("--config", "--store-password-file", "--tls-cert", "--tls-key",
              "--tls-client-ca", "--auth-token-file")
KUBECTL_HINT = (
    "install kubectl >= 1.21 (kustomize v4+): the 'kubectl' package of the Kubernetes "
    "project's apt repository (or of Google Cloud CLI's, which the build machines' image "
    "carries); Debian 12's kubernetes-client is 1.20 (kustomize v2.0.3), too old to read "
    "these kustomizations. Or set KUBECTL to its path.")


class ToolMissing(Exception):
    pass


def kubectl():
    """The kubectl to render with (KUBECTL, else PATH's), checked to be new enough."""
    exe = os.environ.get("KUBECTL") or shutil.which("kubectl")
    if not exe or not os.access(exe, os.X_OK):
        raise ToolMissing(f"kubectl not found: {KUBECTL_HINT}")
    try:
        out = subprocess.run([exe, "version", "--client", "-o", "json"], capture_output=True,
                             text=True, timeout=60, check=True).stdout
        kustomize = json.loads(out).get("kustomizeVersion", "")
    except (OSError, subprocess.SubprocessError, ValueError) as e:
        raise ToolMissing(f"{exe} version --client failed ({e}): {KUBECTL_HINT}")
    m = re.match(r"v(\d+)", kustomize)
    if not m or int(m.group(1)) < 4:
        raise ToolMissing(f"{exe} embeds kustomize '{kustomize or 'v2 or older'}': "
                          f"{KUBECTL_HINT}")
    return exe


def kustomizations(root):
    """Every directory under root holding a kustomization, base first."""
    found = []
    for d, dirs, files in os.walk(root):
        dirs.sort()
        if {"kustomization.yaml", "kustomization.yml", "Kustomization"} & set(files):
            found.append(d)
    return sorted(found, key=lambda d: (os.path.relpath(d, root) != "base", d))


def render(exe, directory, problems):
    """The objects `kubectl kustomize directory` renders ([] when it fails)."""
    r = subprocess.run([exe, "kustomize", directory], capture_output=True, text=True,
                       timeout=120)
    if r.returncode != 0:
        # kubectl's one-line klog prefix, then kustomize's error
        err = re.sub(r'^E\d+ [\d:.]+\s+\d+ \S+\] "command failed" err=<\s*|\s*>\s*$', "",
                     r.stderr.strip())
        problems.append(f"{directory}: kubectl kustomize failed: " + " ".join(err.split()))
        return []
    try:
        return [d for d in yaml.safe_load_all(r.stdout) if d]
    except yaml.YAMLError as e:
        problems.append(f"{directory}: kubectl kustomize gave unparsable YAML: {e}")
        return []


def lint(root, problems):
    exe = shutil.which("yamllint")
    if not exe:
        problems.append("yamllint not found: install Debian's 'yamllint' package "
                        "(scripts/install-deps.sh does)")
        return
    r = subprocess.run([exe, "--strict", "-f", "parsable", "-c",
                        os.path.join(root, ".yamllint"), root],
                       capture_output=True, text=True, timeout=120)
    if r.returncode != 0:
        lines = (r.stdout + r.stderr).strip().splitlines() or [f"exit {r.returncode}"]
        problems += [f"yamllint: {line}" for line in lines]


def validate_schemas(rendered, problems):
    """Each rendered object against the upstream API schemas (kubernetes-models)."""
    node = shutil.which("node")
    if not node:
        problems.append("node not found: install Debian's 'nodejs' and 'npm' packages "
                        "(scripts/install-deps.sh does)")
        return
    if not os.path.isdir(os.path.join(SCHEMA_DIR, "node_modules", "kubernetes-models")):
        problems.append(f"{SCHEMA_DIR}/node_modules lacks kubernetes-models: run "
                        "scripts/install-deps.sh (npm ci --prefix scripts/k8s-schema)")
        return
    items = [{"where": where, "object": o} for where, objects in rendered for o in objects]
    r = subprocess.run([node, os.path.join(SCHEMA_DIR, "validate.mjs")],
                       input=json.dumps(items, default=str), capture_output=True,
                       text=True, timeout=120)
    if r.returncode != 0:
        lines = (r.stdout + r.stderr).strip().splitlines() or [f"exit {r.returncode}"]
        problems += [f"schema: {line}" for line in lines]


def secret_keys(objects, name):
    for d in objects:
        if d.get("kind") == "Secret" and d.get("metadata", {}).get("name") == name:
            return set(d.get("stringData") or {}) | set(d.get("data") or {})
    return None


def check_container(where, c, spec, claims, objects, problems):
    env = {e["name"]: e for e in c.get("env", [])}
    args = [str(a) for a in c.get("args", []) + c.get("command", [])]
    for a in args:
        for var in re.findall(r"\$\((\w+)\)", a):
            if var not in env:
                problems.append(f"{where}: args use $({var}), which env does not set")
    for e in env.values():
        ref = (e.get("valueFrom") or {}).get("secretKeyRef")
        if ref:
            keys = secret_keys(objects, ref["name"])
            if keys is None:
                problems.append(f"{where}: env {e['name']} reads Secret '{ref['name']}', "
                                "which the build does not hold")
            elif ref["key"] not in keys:
                problems.append(f"{where}: env {e['name']} reads key '{ref['key']}' of Secret "
                                f"'{ref['name']}', which has {sorted(keys)}")
    volumes = {v["name"]: v for v in spec.get("volumes", [])}
    mounts = c.get("volumeMounts", [])
    for m in mounts:
        if m["name"] not in volumes and m["name"] not in claims:
            problems.append(f"{where}: mounts volume '{m['name']}', which is not declared")
    for v in volumes.values():
        cm = v.get("configMap")
        if cm and not any(d.get("kind") == "ConfigMap"
                          and d.get("metadata", {}).get("name") == cm["name"] for d in objects):
            problems.append(f"{where}: volume '{v['name']}' is ConfigMap '{cm['name']}', "
                            "which the build does not hold")
        s = v.get("secret")
        if not s:
            continue
        keys = secret_keys(objects, s["secretName"])
        if keys is None:
            problems.append(f"{where}: volume '{v['name']}' is Secret '{s['secretName']}', "
                            "which the build does not hold")
            continue
        for item in s.get("items", []):
            if item["key"] not in keys:
                problems.append(f"{where}: volume '{v['name']}' takes key '{item['key']}' of "
                                f"Secret '{s['secretName']}', which has {sorted(keys)}")
    for flag, value in zip(args, args[1:]):
        if flag in FILE_FLAGS and not value.startswith("$(") and not any(
                value == m["mountPath"] or value.startswith(m["mountPath"].rstrip("/") + "/")
                for m in mounts):
            problems.append(f"{where}: {flag} {value} lies under none of its mounts")


def check_objects(directory, objects):
    """This project's own checks, on what kubectl kustomize rendered."""
    problems = []
    for d in objects:
        kind, name = d.get("kind"), d.get("metadata", {}).get("name")
        if kind not in ("DaemonSet", "StatefulSet", "Deployment"):
            continue
        spec = d.get("spec", {}).get("template", {}).get("spec", {})
        claims = {t["metadata"]["name"] for t in d.get("spec", {}).get("volumeClaimTemplates", [])}
        for c in spec.get("containers", []):
            where = f"{directory}: {kind} {name}, container {c.get('name')}"
            check_container(where, c, spec, claims, objects, problems)
            if c.get("name") == "dflash-evald" and not c.get("readinessProbe"):
                problems.append(f"{where}: no readinessProbe")
    return problems


def check_all(root):
    """(problems, the kustomizations checked)."""
    try:
        exe = kubectl()
    except ToolMissing as e:
        return [str(e)], []
    problems = []
    dirs = kustomizations(root)
    if not any(os.path.relpath(d, root) == "base" for d in dirs):
        problems.append(f"{root}: no base/ kustomization")
    lint(root, problems)
    rendered = []
    for d in dirs:
        objects = render(exe, d, problems)
        rendered.append((d, objects))
        problems += check_objects(d, objects)
    validate_schemas(rendered, problems)
    return problems, dirs


DEFECTS = (
    # (file under deploy/k8s, text, replacement, what the report must say)
    ("overlays/fleet/db-secret.yaml", "  url: ", "  uri: ", "reads key 'url' of Secret"),
    ("overlays/fleet/daemonset-fleet.yaml", "fieldPath: status.podIP",
     "fieldPath: status.podIP\n          readinessProbe: null", "no readinessProbe"),
    ("overlays/fleet/daemonset-fleet.yaml", "- name: DFLASH_STORE_URL",
     "- name: DFLASH_STORE_URI", "args use $(DFLASH_STORE_URL)"),
    ("overlays/fleet/daemonset-fleet.yaml", "mountPath: /etc/dflash-evald/db",
     "mountPath: /etc/dflash-evald/database",
     "--store-password-file /etc/dflash-evald/db/password lies under none"),
    ("overlays/fleet/kustomization.yaml", "daemonset-fleet.yaml", "daemonset-flet.yaml",
     "kubectl kustomize failed"),
    ("base/daemonset.yaml", "containerPort: 50051", "containerPort: grpc-port",
     "containerPort must be integer"),
    ("base/service.yaml", "  type: ClusterIP", "  type: ClusterIP  ", "(trailing-spaces)"),
)


def selftest(root):
    """Each defect, made in a copy, is reported; the real tree is clean."""
    problems, dirs = check_all(root)
    if problems:
        print("selftest: the tree itself is not clean:\n" + "\n".join(problems))
        return 1
    for rel, old, new, want in DEFECTS:
        with tempfile.TemporaryDirectory() as tmp:
            copy_root = os.path.join(tmp, "k8s")
            shutil.copytree(root, copy_root)
            path = os.path.join(copy_root, rel)
            with open(path) as f:
                text = f.read()
            assert old in text, (rel, old)
            with open(path, "w") as f:
                f.write(text.replace(old, new, 1))
            got, _ = check_all(copy_root)
            if not any(want in p for p in got):
                print(f"selftest: breaking {rel} was not caught (wanted '{want}'): {got}")
                return 1
    saved = os.environ.get("KUBECTL")
    os.environ["KUBECTL"] = os.path.join(root, "no-such-kubectl")
    try:
        got, _ = check_all(root)
    finally:
        if saved is None:
            del os.environ["KUBECTL"]
        else:
            os.environ["KUBECTL"] = saved
    if not any("kubectl not found: install kubectl" in p for p in got):
        print(f"selftest: a missing kubectl was not reported with its install hint: {got}")
        return 1
    print(f"selftest: {len(DEFECTS)} defects and a missing kubectl caught; "
          f"the {len(dirs)} kustomizations are clean")
    return 0


def main(argv):
    default = os.path.normpath(os.path.join(HERE, "..", "deploy", "k8s"))
    if argv[1:2] == ["--selftest"]:
        return selftest(default)
    root = os.path.normpath(argv[1]) if len(argv) > 1 else default
    problems, dirs = check_all(root)
    for p in problems:
        print(p)
    if not problems:
        print(f"{len(dirs)} kustomizations under {root} render with kubectl kustomize, "
              "pass yamllint and the upstream schemas, and hold together: clean")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
