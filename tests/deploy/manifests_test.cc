// The deployment files, checked without a cluster: every Kubernetes YAML
// document parses and has what a one-server-per-GPU-node deployment needs;
// the shipped configs pass the server's own config parser; the Dockerfile
// and the systemd unit keep their hardening. (kubectl --dry-run=client needs
// an API server for discovery; scripts/check_k8s.py renders every
// kustomization with kubectl kustomize and validates it against the schemas.)
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include <yaml-cpp/yaml.h>

#include "app/server_config.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "test_util/process.h"
#include "test_util/temp_dir.h"

namespace dflash {
namespace {

namespace fs = std::filesystem;
using ::dflash::testing::ReadFileOrEmpty;
using ::testing::HasSubstr;

std::string Source() {
  return testing::BinaryFromEnv("DFLASH_SOURCE_DIR");
}

struct Doc {
  std::string file;
  YAML::Node node;
  std::string Where() const {
    return file + ": " + node["kind"].as<std::string>("?") + "/" +
           node["metadata"]["name"].as<std::string>("?");
  }
};

std::vector<Doc> LoadManifests() {
  std::vector<Doc> docs;
  for (const auto& entry : fs::directory_iterator(Source() + "/deploy/k8s/base")) {
    if (entry.path().extension() != ".yaml") continue;
    if (entry.path().filename() == "kustomization.yaml") continue;
    for (const YAML::Node& n : YAML::LoadAllFromFile(entry.path().string())) {
      if (n.IsNull()) continue;
      docs.push_back({entry.path().filename().string(), n});
    }
  }
  return docs;
}

// The config text fed through the server's real parser: "" when it is
// accepted, else the error.
std::string ConfigError(const std::string& text) {
  CLI::App app("test");
  app::ServerConfig config;
  app::AddServerOptions(app, config);
  try {
    app::ParseConfigText(text, app, &config.preload);
  } catch (const CLI::ParseError& e) {
    return e.what();
  }
  return "";
}

TEST(ManifestsTest, EveryDocumentHasKindVersionAndName) {
  const std::vector<Doc> docs = LoadManifests();
  ASSERT_GE(docs.size(), 5u);
  std::set<std::string> kinds;
  for (const Doc& d : docs) {
    ASSERT_TRUE(d.node.IsMap()) << d.file;
    EXPECT_TRUE(d.node["apiVersion"].IsScalar()) << d.file;
    ASSERT_TRUE(d.node["kind"].IsScalar()) << d.file;
    EXPECT_TRUE(d.node["metadata"]["name"].IsScalar()) << d.file;
    kinds.insert(d.node["kind"].as<std::string>());
  }
  for (const char* k : {"ConfigMap", "Secret", "DaemonSet", "Service"}) {
    EXPECT_EQ(kinds.count(k), 1u) << "no " << k;
  }
}

// Every mount of container `c` names a volume of `pod`; config and token
// come from the manifests' `configmaps` and `secrets`.
void ExpectMountsFromManifests(const YAML::Node& pod, const YAML::Node& c,
                               const std::set<std::string>& configmaps,
                               const std::set<std::string>& secrets) {
  std::map<std::string, YAML::Node> volumes;
  for (const auto& v : pod["spec"]["volumes"]) volumes[v["name"].as<std::string>()] = YAML::Node(v);
  std::set<std::string> mounted;
  for (const auto& m : c["volumeMounts"]) {
    const std::string name = m["name"].as<std::string>();
    EXPECT_EQ(volumes.count(name), 1u) << "mount of missing volume " << name;
    mounted.insert(m["mountPath"].as<std::string>());
  }
  EXPECT_EQ(mounted.count("/var/lib/dflash-evald"), 1u) << "no state directory";
  EXPECT_EQ(mounted.count("/data"), 1u) << "no models/datasets volume";
  bool has_config = false, has_secret = false;
  for (const auto& [name, v] : volumes) {
    if (v["configMap"]) {
      EXPECT_EQ(configmaps.count(v["configMap"]["name"].as<std::string>()), 1u) << name;
      has_config = true;
    }
    if (v["secret"]) {
      EXPECT_EQ(secrets.count(v["secret"]["secretName"].as<std::string>()), 1u) << name;
      has_secret = true;
    }
  }
  EXPECT_TRUE(has_config);
  EXPECT_TRUE(has_secret);
}

TEST(ManifestsTest, ServerPodsAskForAGpuProbeGrpcHealthAndAreScraped) {
  std::map<std::string, YAML::Node> by_kind;
  std::set<std::string> configmaps, secrets;
  for (const Doc& d : LoadManifests()) {
    const std::string kind = d.node["kind"].as<std::string>();
    by_kind[kind] = d.node;
    if (kind == "ConfigMap") configmaps.insert(d.node["metadata"]["name"].as<std::string>());
    if (kind == "Secret") secrets.insert(d.node["metadata"]["name"].as<std::string>());
  }
  YAML::Node ds = by_kind["DaemonSet"];
  ASSERT_TRUE(ds) << "no DaemonSet";
  EXPECT_EQ(ds["apiVersion"].as<std::string>(), "apps/v1");
  const YAML::Node pod = ds["spec"]["template"];
  // The selector picks the template's labels.
  for (const auto& kv : ds["spec"]["selector"]["matchLabels"]) {
    EXPECT_EQ(pod["metadata"]["labels"][kv.first.as<std::string>()].as<std::string>(""),
              kv.second.as<std::string>());
  }
  const YAML::Node ann = pod["metadata"]["annotations"];
  EXPECT_EQ(ann["prometheus.io/scrape"].as<std::string>(""), "true");
  EXPECT_EQ(ann["prometheus.io/path"].as<std::string>(""), "/metrics");

  const YAML::Node containers = pod["spec"]["containers"];
  ASSERT_TRUE(containers.IsSequence());
  ASSERT_EQ(containers.size(), 1u);
  const YAML::Node c = containers[0];
  EXPECT_TRUE(c["image"].IsScalar());
  std::map<std::string, int> ports;  // name -> containerPort
  for (const auto& p : c["ports"])
    ports[p["name"].as<std::string>()] = p["containerPort"].as<int>();
  ASSERT_EQ(ports.count("grpc"), 1u);
  ASSERT_EQ(ports.count("metrics"), 1u);
  EXPECT_EQ(ann["prometheus.io/port"].as<std::string>(""), std::to_string(ports["metrics"]));

  EXPECT_EQ(c["resources"]["requests"]["nvidia.com/gpu"].as<int>(0), 1);
  EXPECT_EQ(c["resources"]["limits"]["nvidia.com/gpu"].as<int>(0), 1);
  for (const char* probe : {"startupProbe", "readinessProbe", "livenessProbe"}) {
    const YAML::Node p = c[probe];
    ASSERT_TRUE(p) << "no " << probe;
    ASSERT_TRUE(p["grpc"].IsMap()) << probe << " is not a native gRPC probe";
    EXPECT_EQ(p["grpc"]["port"].as<int>(0), ports["grpc"]) << probe;
    EXPECT_FALSE(p["httpGet"] || p["exec"] || p["tcpSocket"]) << probe;
  }
  EXPECT_TRUE(pod["spec"]["securityContext"]["runAsNonRoot"].as<bool>(false));

  ExpectMountsFromManifests(pod, c, configmaps, secrets);

  // The Service reaches the pods on named ports that exist.
  YAML::Node svc = by_kind["Service"];
  ASSERT_TRUE(svc);
  for (const auto& kv : svc["spec"]["selector"]) {
    EXPECT_EQ(pod["metadata"]["labels"][kv.first.as<std::string>()].as<std::string>(""),
              kv.second.as<std::string>());
  }
  for (const auto& p : svc["spec"]["ports"]) {
    EXPECT_EQ(ports.count(p["targetPort"].as<std::string>()), 1u);
  }
}

TEST(ManifestsTest, ConfigMapAndExampleConfigPassTheServersParser) {
  bool found = false;
  for (const Doc& d : LoadManifests()) {
    if (d.node["kind"].as<std::string>() != "ConfigMap") continue;
    const std::string text = d.node["data"]["config.yaml"].as<std::string>("");
    ASSERT_FALSE(text.empty()) << d.Where();
    EXPECT_EQ(ConfigError(text), "") << d.Where();
    found = true;
  }
  EXPECT_TRUE(found);
  EXPECT_EQ(ConfigError(ReadFileOrEmpty(Source() + "/deploy/config.example.yaml")), "");
  // And the check can fail.
  EXPECT_THAT(ConfigError("listen: x\nstat_dir: /y\n"), HasSubstr("unknown key 'stat_dir'"));
}

TEST(ManifestsTest, DockerfileKeepsItsPinsUserHealthcheckAndVolume) {
  const std::string df = ReadFileOrEmpty(Source() + "/Dockerfile");
  ASSERT_FALSE(df.empty());
  // The pins are ARGs before the first FROM, in one place.
  const size_t first_from = df.find("\nFROM ");
  ASSERT_NE(first_from, std::string::npos);
  for (const char* arg : {"ARG CUDA_IMAGE=", "ARG RUNTIME_IMAGE=", "ARG LIBTORCH_VERSION="}) {
    const size_t at = df.find(arg);
    EXPECT_NE(at, std::string::npos) << arg;
    EXPECT_LT(at, first_from) << arg << " must precede the first FROM";
  }
  EXPECT_THAT(df, HasSubstr(" AS build"));
  EXPECT_THAT(df, HasSubstr("\nUSER dflash"));
  EXPECT_THAT(df, HasSubstr("\nHEALTHCHECK "));
  EXPECT_THAT(df, HasSubstr("health"));
  EXPECT_THAT(df, HasSubstr("\nVOLUME [\"/var/lib/dflash-evald\"]"));
}

TEST(ManifestsTest, SystemdUnitIsHardened) {
  const std::string unit = ReadFileOrEmpty(Source() + "/deploy/dflash-evald.service");
  for (const char* line :
       {"User=dflash", "ProtectSystem=strict", "ReadWritePaths=/var/lib/dflash-evald",
        "Restart=on-failure", "NoNewPrivileges=yes"}) {
    EXPECT_THAT(unit, HasSubstr(std::string("\n") + line + "\n")) << line;
  }
}

}  // namespace
}  // namespace dflash
