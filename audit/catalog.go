package audit

import (
	"slices"
	"sync"
)

// Catalog returns the 38 rules in report order (ENV, FS, NET, DEP). The
// returned rules are shared; callers must not modify them.
func Catalog() []*Rule {
	catalogOnce.Do(func() {
		catalog = buildCatalog()
		byID = make(map[string]*Rule, len(catalog))
		for _, r := range catalog {
			byID[r.ID] = r
		}
	})
	return catalog
}

// RuleByID returns the catalog rule with the given ID, or nil.
func RuleByID(id string) *Rule {
	Catalog()
	return byID[id]
}

var (
	catalogOnce sync.Once
	catalog     []*Rule
	byID        map[string]*Rule
)

// buildCatalog is the rule table. The Dependency column is the dependency
// profile's choice: it blocks on what an install script could use against the
// machine or the supply chain (credentials, loader hooks, build hooks, lockfile
// integrity), and not on environment hardening indicators (seccomp, no_new_privs,
// root in a CI container) that only the untrusted profile requires.
func buildCatalog() []*Rule {
	return slices.Concat(envRules(), fsRules(), netRules(), depRules())
}

// envRules are the rules of environment integrity.
func envRules() []*Rule {
	return []*Rule{
		{ID: "ENV001", Title: "Running as uid 0", Domain: DomainEnv, Severity: High,
			Reads:  "/proc/self/status, /proc/self/uid_map",
			Remedy: "Run as an unprivileged user (shadow run does this for the command); in a container set USER to a non-root uid.",
			Why:    "Root inside the audited environment turns any other weakness into full control. Lowered to low when uid 0 holds no capabilities or maps to an unprivileged host user. Dependency installs in root CI containers are common, so only untrusted blocks.",
			check:  checkENV001},
		{ID: "ENV002", Title: "Isolation not confirmed", Domain: DomainEnv, Severity: High,
			Reads:  "/.dockerenv, /run/.containerenv, /run/systemd/container, /proc/1/cgroup, /proc/self/uid_map, /sys/hypervisor, /proc/cpuinfo",
			Remedy: "Run the command in shadow's jail (shadow run), a container, or a VM.",
			Why:    "Without a container, VM or user-namespace marker the command runs directly on the host.",
			check:  checkENV002},
		{ID: "ENV003", Title: "Seccomp filter not applied", Domain: DomainEnv, Severity: High,
			Reads:  "Seccomp: in /proc/self/status",
			Remedy: "Apply a seccomp filter (shadow's jail does; docker's default profile does unless --security-opt seccomp=unconfined).",
			Why:    "Without seccomp every kernel interface (keyctl, bpf, userfaultfd, io_uring) is reachable.",
			check:  checkENV003},
		{ID: "ENV004", Title: "NoNewPrivs not set", Domain: DomainEnv, Severity: High,
			Reads:  "NoNewPrivs: in /proc/self/status",
			Remedy: "Set no_new_privs (prctl PR_SET_NO_NEW_PRIVS; docker --security-opt no-new-privileges).",
			Why:    "Without no_new_privs a setuid binary can raise privileges again.",
			check:  checkENV004},
		{ID: "ENV005", Title: "Dangerous capabilities held", Domain: DomainEnv, Severity: Critical,
			Reads:  "CapEff and CapBnd in /proc/self/status, /proc/sys/kernel/cap_last_cap",
			Remedy: "Drop the capabilities (docker --cap-drop ALL, no --privileged); shadow's jail clears every set.",
			Why:    "CAP_SYS_ADMIN, SYS_PTRACE, NET_ADMIN, SYS_MODULE, SYS_RAWIO, DAC_READ_SEARCH, BPF or PERFMON are direct escape or spying primitives.",
			check:  checkENV005},
		{ID: "ENV006", Title: "Dynamic loader injection", Domain: DomainEnv, Severity: High, Dependency: true,
			Reads:  "LD_PRELOAD, LD_AUDIT, LD_LIBRARY_PATH, /etc/ld.so.preload",
			Remedy: "Unset LD_PRELOAD, LD_AUDIT and LD_LIBRARY_PATH and empty /etc/ld.so.preload, or explain them in the image.",
			Why:    "A preloaded library runs inside every process the install starts.",
			check:  checkENV006},
		{ID: "ENV007", Title: "Interpreter hook variables", Domain: DomainEnv, Severity: High, Dependency: true,
			Reads:  "NODE_OPTIONS, PYTHONPATH, PYTHONSTARTUP, PERL5OPT, RUBYOPT, BASH_ENV, ENV, GIT_SSH_COMMAND, npm_config_*",
			Remedy: "Unset the listed variables for the command; set npm registry and ignore-scripts in a reviewed .npmrc instead.",
			Why:    "These variables load code into every interpreter or redirect package resolution.",
			check:  checkENV007},
		{ID: "ENV008", Title: "No LSM confinement", Domain: DomainEnv, Severity: High,
			Reads:  "/proc/self/attr/current, /proc/self/attr/apparmor/current, /sys/kernel/security/lsm, a Landlock probe",
			Remedy: "Run under an AppArmor/SELinux profile or Landlock (shadow's jail applies Landlock).",
			Why:    "An LSM bounds file access even when DAC permissions are wrong. An unreadable label is skipped, never taken as unconfined.",
			check:  checkENV008},
		{ID: "ENV009", Title: "Host escape primitives", Domain: DomainEnv, Severity: Critical,
			Reads:  "/proc/self/mountinfo, /proc/sys/kernel/core_pattern, /proc/sysrq-trigger, release_agent, /proc/partitions, /dev",
			Remedy: "Mount /proc/sys and /sys read-only, do not pass host block devices, and do not run privileged containers.",
			Why:    "A writable core_pattern, release_agent or host disk is a documented container escape.",
			check:  checkENV009},
	}
}

// fsRules are the rules of filesystem and credential exposure.
func fsRules() []*Rule {
	return []*Rule{
		{ID: "FS001", Title: "Container daemon socket reachable", Domain: DomainFS, Severity: Critical,
			Reads:  "docker, containerd, podman, cri-o and buildkit sockets under /run, /var/run and $XDG_RUNTIME_DIR (stat and access, never connected)",
			Remedy: "Do not mount the daemon socket into the environment; use rootless builds or a remote builder with its own credentials.",
			Why:    "Access to a container daemon socket is root on its host.",
			check:  checkFS001},
		{ID: "FS002", Title: "Host credentials readable", Domain: DomainFS, Severity: High, Dependency: true,
			Reads:  "~/.ssh/id_*, ~/.aws/credentials, ~/.kube/config, ~/.gnupg, ~/.docker/config.json, ~/.npmrc, ~/.pypirc, ~/.netrc, ~/.git-credentials, ~/.config/gh/hosts.yml, cargo credentials (access check only)",
			Remedy: "Run the command where these files are not visible (shadow run hides them), or move the credentials out of the home directory.",
			Why:    "Install scripts that steal exactly these files are the common supply-chain payload.",
			check:  checkFS002},
		{ID: "FS003", Title: "Persistence files writable", Domain: DomainFS, Severity: High, Dependency: true,
			Reads:  "~/.bashrc, ~/.profile, ~/.zshrc, ~/.ssh/authorized_keys, ~/.gitconfig, ~/.config/autostart, ... (access check only)",
			Remedy: "Run the command with a private home (shadow run does), or make these files read-only to it.",
			Why:    "A writable shell rc or authorized_keys lets one install persist beyond it.",
			check:  checkFS003},
		{ID: "FS004", Title: "System directories writable", Domain: DomainFS, Severity: High,
			Reads:  "/usr, /etc, /boot, /lib, /bin, /sbin (access and mount flags)",
			Remedy: "Mount the system read-only (docker --read-only) or run as an unprivileged user.",
			Why:    "A writable system lets code replace the tools every later command runs. Root CI containers commonly have it, so only untrusted blocks.",
			check:  checkFS004},
		{ID: "FS005", Title: "Workload identity present", Domain: DomainFS, Severity: High, Dependency: true,
			Reads:  "Kubernetes service-account tokens, AWS_WEB_IDENTITY_TOKEN_FILE, GOOGLE_APPLICATION_CREDENTIALS, AZURE_FEDERATED_TOKEN_FILE, ACTIONS_ID_TOKEN_REQUEST_*",
			Remedy: "Set automountServiceAccountToken: false, and do not export cloud identity variables to the install step.",
			Why:    "A workload identity token is a cloud or cluster credential.",
			check:  checkFS005},
		{ID: "FS006", Title: "Project registry config holds a token", Domain: DomainFS, Severity: High, Dependency: true,
			Reads:  "project .npmrc, .yarnrc and .yarnrc.yml (_authToken, _auth, _password, npmAuthToken)",
			Remedy: "Replace the literal token with ${NPM_TOKEN} and revoke the exposed token.",
			Why:    "Every dependency's install script can read a token kept in the project.",
			check:  checkFS006},
		{ID: "FS007", Title: "Secret variables reach the command", Domain: DomainFS, Severity: High, Dependency: true,
			Reads:  "environment variable names and value shapes (values are never reported)",
			Remedy: "Do not export secrets to the command; pass only what it needs (shadow run --env NAME).",
			Why:    "Environment variables are inherited by every install script.",
			check:  checkFS007},
		{ID: "FS008", Title: "Agent or VCS control surfaces pre-seeded", Domain: DomainFS, Severity: High,
			Reads:  ".claude/settings*.json hooks, .claude/{agents,commands,skills}, .git/hooks, core.fsmonitor and core.hooksPath in .git/config, .github/workflows",
			Remedy: "Review and remove hooks and agent configuration that came with the project before letting an agent run in it.",
			Why:    "A repository can ship commands that an agent or git runs automatically.",
			check:  checkFS008},
	}
}

// netRules are the rules of network exposure.
func netRules() []*Rule {
	return []*Rule{
		{ID: "NET001", Title: "TCP listener on all interfaces", Domain: DomainNet, Severity: High,
			Reads:  "/proc/net/tcp, /proc/net/tcp6, /proc/net/dev, /proc/*/fd",
			Remedy: "Bind services to 127.0.0.1, or stop them before running the command.",
			Why:    "A listener on 0.0.0.0 or :: is reachable from the network.",
			check:  checkNET001},
		{ID: "NET002", Title: "Host network namespace shared", Domain: DomainNet, Severity: High,
			Reads:  "/proc/net/dev, /proc/net/unix, /proc/self/ns/net, /proc/1/ns/net",
			Remedy: "Give the command its own network namespace (shadow run's default; no docker --network host).",
			Why:    "The host namespace exposes the host's loopback services and abstract unix sockets.",
			check:  checkNET002},
		{ID: "NET003", Title: "Unrestricted egress", Domain: DomainNet, Severity: Medium,
			Reads:  "/proc/net/route, /proc/net/ipv6_route",
			Remedy: "Run without a default route and use an allow-list proxy (shadow run --allow-domain).",
			Why:    "A default route lets any script send data anywhere. Raised to high when a route reaches the link-local metadata service.",
			check:  checkNET003},
		{ID: "NET004", Title: "Container host off the machine", Domain: DomainNet, Severity: Critical,
			Reads:  "DOCKER_HOST, CONTAINER_HOST, BUILDKIT_HOST",
			Remedy: "Unset DOCKER_HOST/CONTAINER_HOST for the command.",
			Why:    "A remote daemon endpoint is root on another machine.",
			check:  checkNET004},
	}
}

// depRules are the rules of the supply chain and build hooks.
func depRules() []*Rule {
	return []*Rule{
		{ID: "DEP000", Title: "Manifest inventory", Domain: DomainDep, Severity: High, Dependency: true,
			Reads:  "package.json, package-lock.json, npm-shrinkwrap.json, yarn.lock, pnpm-lock.yaml, Cargo.toml, Cargo.lock, .cargo/config(.toml)",
			Remedy: "Fix the manifest so it parses; shadow does not judge what it cannot read.",
			Why:    "A manifest that fails to parse is reported, never ignored.",
			check:  checkDEP000},
		{ID: "DEP001", Title: "Manifest without lockfile", Domain: DomainDep, Severity: High, Dependency: true,
			Reads:  "manifests and lockfiles",
			Remedy: "Commit a lockfile (npm install --package-lock-only, cargo generate-lockfile) and install with npm ci / cargo build --locked.",
			Why:    "Without a lockfile every install resolves whatever the registry serves today.",
			check:  checkDEP001},
		{ID: "DEP002", Title: "Lockfile integrity gaps", Domain: DomainDep, Severity: High, Dependency: true,
			Reads:  "package-lock.json, yarn.lock, pnpm-lock.yaml, Cargo.lock",
			Remedy: "Regenerate the lockfile against the registry over https so every entry carries a sha512 integrity / checksum.",
			Why:    "Entries without integrity, with sha1 only, or resolved off the registry can be swapped. Raised to critical for plain http.",
			check:  checkDEP002},
		{ID: "DEP003", Title: "Install lifecycle scripts", Domain: DomainDep, Severity: High, Dependency: true,
			Reads:  "package.json scripts, node_modules/*/package.json, lockfile hasInstallScript, binding.gyp, .pnpmfile.cjs",
			Remedy: "Install with --ignore-scripts, or allow-list the packages that need scripts (lavamoat.allowScripts, pnpm.onlyBuiltDependencies).",
			Why:    "Lifecycle scripts run arbitrary code when a package manager installs, packs or publishes: a dependency's preinstall/install/postinstall, and the project's own prepare, prepublish, preprepare, postprepare, prepack, postpack, dependencies, pnpm:devPreinstall and the rest of npm, yarn, pnpm and bun's lists; pnpm loads .pnpmfile.cjs on every install.",
			check:  checkDEP003},
		{ID: "DEP004", Title: "Piped shell installer", Domain: DomainDep, Severity: Critical,
			Reads:  "package.json scripts, build.rs string literals",
			Remedy: "Remove the curl|sh step; vendor or pin the tool with a checksum.",
			Why:    "curl ... | sh runs whatever the server sends. High instead of critical when only a project script run by hand does it.",
			check:  checkDEP004},
		{ID: "DEP005", Title: "Download then execute", Domain: DomainDep, Severity: Critical,
			Reads:  "package.json scripts, hook targets",
			Remedy: "Remove the download-and-run step; depend on a pinned package instead.",
			Why:    "Fetching a file and running it bypasses the lockfile. High instead of critical when only a project script run by hand does it.",
			check:  checkDEP005},
		{ID: "DEP006", Title: "Unpinned sources", Domain: DomainDep, Severity: Medium,
			Reads:  "package.json dependency specs, Cargo.toml git/path dependencies",
			Remedy: "Pin git dependencies to a full commit (#<40-hex>, rev = \"...\") and keep path dependencies inside the workspace.",
			Why:    "A branch, tag or URL can change after review.",
			check:  checkDEP006},
		{ID: "DEP007", Title: "Cargo source replacement", Domain: DomainDep, Severity: High, Dependency: true,
			Reads:  ".cargo/config(.toml) up the tree and in $CARGO_HOME, Cargo.toml [patch] and [replace]",
			Remedy: "Remove the [source] replacement or [patch] unless it is a reviewed vendor directory.",
			Why:    "Source replacement silently swaps where crates come from.",
			check:  checkDEP007},
		{ID: "DEP008", Title: "Build script uses network or processes", Domain: DomainDep, Severity: High, Dependency: true,
			Reads:  "build.rs (or build = ...), proc-macro crates, [build-dependencies]",
			Remedy: "Review the build script; build with network off (shadow run's default).",
			Why:    "A build script runs on every cargo build with the developer's rights.",
			check:  checkDEP008},
		{ID: "DEP009", Title: "Build script reads outside its crate", Domain: DomainDep, Severity: High, Dependency: true,
			Reads:  "build.rs",
			Remedy: "Review the build script; it should read only its crate and write only OUT_DIR.",
			Why:    "Directory walks, HOME and credential paths in a build script are how secrets are collected.",
			check:  checkDEP009},
		{ID: "DEP010", Title: "Cargo local wrappers", Domain: DomainDep, Severity: High, Dependency: true,
			Reads:  ".cargo/config(.toml) [build] rustc-wrapper, [target.*] linker/runner, [env]; RUSTC_WRAPPER",
			Remedy: "Remove wrappers, linkers, runners and [env] the project ships, or review them.",
			Why:    "A wrapper or linker set by the project runs on every build.",
			check:  checkDEP010},
		{ID: "DEP011", Title: "npm config override or bin shadowing", Domain: DomainDep, Severity: High, Dependency: true,
			Reads:  ".npmrc, .yarnrc, .yarnrc.yml, package.json bin, pnpm neverBuiltDependencies, trustedDependencies",
			Remedy: "Remove the overrides from the project .npmrc, .yarnrc or .yarnrc.yml and rename bins that shadow system tools.",
			Why:    "A project can re-enable scripts, change the shell, or put its own 'node' or 'git' first on PATH.",
			check:  checkDEP011},
		{ID: "DEP012", Title: "Obfuscated hook code", Domain: DomainDep, Severity: High, Dependency: true,
			Reads:  "files run by lifecycle hooks",
			Remedy: "Do not install the package until its hook code is reviewed in readable form.",
			Why:    "Obfuscation in install-time code has no legitimate purpose. A file too large to scan is skipped, not passed.",
			check:  checkDEP012},
		{ID: "DEP013", Title: "Exfiltration indicators", Domain: DomainDep, Severity: Critical,
			Reads:  "scripts, hook targets, build.rs",
			Remedy: "Do not install; report the package to the registry.",
			Why:    "webhook.site, tunnels, paste sites and process.env dumps are how stolen data leaves.",
			check:  checkDEP013},
		{ID: "DEP014", Title: "Worm or CI tampering", Domain: DomainDep, Severity: Critical,
			Reads:  "scripts, hook targets",
			Remedy: "Do not install; rotate npm and CI tokens if it ran.",
			Why:    "npm publish from a hook, workflow writes and secret scanners are self-propagation (Shai-Hulud).",
			check:  checkDEP014},
		{ID: "DEP015", Title: "Registry or scope confusion", Domain: DomainDep, Severity: High, Dependency: true,
			Reads:  ".npmrc @scope:registry, lockfile resolved hosts",
			Remedy: "Regenerate the lockfile against the configured scope registry.",
			Why:    "A scoped package resolved from another registry is dependency confusion.",
			check:  checkDEP015},
		{ID: "DEP016", Title: "Typosquat or manifest confusion", Domain: DomainDep, Severity: Medium,
			Reads:  "dependency names, installed node_modules/*/package.json, lockfile",
			Remedy: "Check the name is the package you meant; reinstall from the lockfile.",
			Why:    "Names one or two edits from a popular package, and installed packages differing from the lockfile, are classic confusion.",
			check:  checkDEP016},
	}
}
