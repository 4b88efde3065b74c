#!/usr/bin/env python3
"""Checks the Kubernetes manifests under deploy/k8s without a cluster.

For each kustomization (the base, the fleet overlay, try-postgres): every
resource and patch file exists and parses as YAML; every patch names an
object the resources hold; and, on the result (patches merged as kustomize's
strategic merge does for these fields), every workload container:
  - has each $(VAR) its args use among its env;
  - reads each secretKeyRef from a Secret of the build that has that key;
  - mounts only declared volumes, whose Secret items exist;
  - finds the files its flags name (--config, --store-password-file, TLS,
    token) under one of its mounts;
and the dflash-evald container has a readiness probe.

Usage: check_k8s.py [DEPLOY_K8S_DIR]    (default: the repo's deploy/k8s)
       check_k8s.py --selftest          (breaks a copy; each defect is caught)
Exit 0 when clean; 1 with one line per problem.
"""
import copy
import os
import re
import shutil
import sys
import tempfile

import yaml

FILE_FLAGS = ("--config", "--store-password-file", "--tls-cert", "--tls-key",
              "--tls-client-ca", "--auth-token-file")


def load_docs(path, problems):
    try:
        with open(path) as f:
            return [d for d in yaml.safe_load_all(f) if d]
    except (OSError, yaml.YAMLError) as e:
        problems.append(f"{path}: {e}")
        return []


def key(doc):
    meta = doc.get("metadata", {})
    return (doc.get("kind"), meta.get("name"), meta.get("namespace"))


def merge_named(base, patch, field):
    """Strategic merge of a list of mappings keyed by `field`."""
    out = [copy.deepcopy(b) for b in base or []]
    for p in patch or []:
        same = [o for o in out if o.get(field) == p.get(field)]
        if same:
            merge(same[0], p)
        else:
            out.append(copy.deepcopy(p))
    return out


LIST_KEYS = {"containers": "name", "env": "name", "volumes": "name",
             "volumeMounts": "mountPath", "ports": "containerPort"}


def merge(base, patch):
    for k, v in patch.items():
        if v is None:
            base.pop(k, None)  # a null deletes the key
        elif k in LIST_KEYS and isinstance(v, list):
            base[k] = merge_named(base.get(k), v, LIST_KEYS[k])
        elif isinstance(v, dict) and isinstance(base.get(k), dict):
            merge(base[k], v)
        else:
            base[k] = copy.deepcopy(v)


def build(directory, problems):
    """The objects `kustomize build directory` would give (for these fields)."""
    kfile = os.path.join(directory, "kustomization.yaml")
    if not os.path.isfile(kfile):
        problems.append(f"{directory}: no kustomization.yaml")
        return {}
    docs = load_docs(kfile, problems)
    k = docs[0] if docs else {}
    objects = {}
    for r in k.get("resources", []):
        path = os.path.normpath(os.path.join(directory, r))
        if os.path.isdir(path):
            objects.update(build(path, problems))
        elif os.path.isfile(path):
            for d in load_docs(path, problems):
                objects[key(d)] = d
        else:
            problems.append(f"{kfile}: resource '{r}' does not exist")
    for p in k.get("patches", []) + k.get("patchesStrategicMerge", []):
        rel = p["path"] if isinstance(p, dict) else p
        path = os.path.join(directory, rel)
        if not os.path.isfile(path):
            problems.append(f"{kfile}: patch '{rel}' does not exist")
            continue
        for d in load_docs(path, problems):
            if key(d) not in objects:
                problems.append(f"{path}: patches {key(d)}, which no resource defines")
            else:
                merge(objects[key(d)], d)
    return objects


def secret_keys(objects, name):
    for (kind, n, _), d in objects.items():
        if kind == "Secret" and n == name:
            return set(d.get("stringData", {})) | set(d.get("data", {}))
    return None


def check_container(where, c, spec, claims, objects, problems):
    env = {e["name"]: e for e in c.get("env", [])}
    args = [str(a) for a in c.get("args", []) + c.get("command", [])]
    for a in args:
        for var in re.findall(r"\$\((\w+)\)", a):
            if var not in env:
                problems.append(f"{where}: args use $({var}), which env does not set")
    for e in env.values():
        ref = e.get("valueFrom", {}).get("secretKeyRef")
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
        if cm and not any(k[:2] == ("ConfigMap", cm["name"]) for k in objects):
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


def check(directory):
    problems = []
    objects = build(directory, problems)
    for (kind, name, _), d in objects.items():
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


OVERLAYS = ("", "fleet", "fleet/try-postgres")


def check_all(root):
    problems = []
    for overlay in OVERLAYS:
        problems += check(os.path.join(root, overlay) if overlay else root)
    return problems


def selftest(root):
    """Each defect, made in a copy, is reported; the real tree is clean."""
    assert check_all(root) == [], check_all(root)
    defects = {
        "fleet/db-secret.yaml": ("  url: ", "  uri: ", "reads key 'url' of Secret"),
        "fleet/daemonset-fleet.yaml": ("fieldPath: status.podIP", "fieldPath: status.podIP\n"
                                       "          readinessProbe: null",
                                       "no readinessProbe"),
        "fleet/kustomization.yaml": ("daemonset-fleet.yaml", "daemonset-flet.yaml",
                                     "patch 'daemonset-flet.yaml' does not exist"),
    }
    for rel, (old, new, want) in defects.items():
        with tempfile.TemporaryDirectory() as tmp:
            copy_root = os.path.join(tmp, "k8s")
            shutil.copytree(root, copy_root)
            path = os.path.join(copy_root, rel)
            with open(path) as f:
                text = f.read()
            assert old in text, (rel, old)
            with open(path, "w") as f:
                f.write(text.replace(old, new, 1))
            got = check_all(copy_root)
            if not any(want in p for p in got):
                print(f"selftest: breaking {rel} was not caught (wanted '{want}'): {got}")
                return 1
    print(f"selftest: {len(defects)} defects caught; the tree is clean")
    return 0


def main(argv):
    here = os.path.dirname(os.path.abspath(__file__))
    default = os.path.join(here, "..", "deploy", "k8s")
    if argv[1:2] == ["--selftest"]:
        return selftest(os.path.normpath(default))
    root = argv[1] if len(argv) > 1 else default
    problems = check_all(os.path.normpath(root))
    for p in problems:
        print(p)
    if not problems:
        print(f"{len(OVERLAYS)} kustomizations under {root}: clean")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
