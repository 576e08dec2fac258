package audit

// installHook is a package.json script a package manager runs on its own, as
// part of another command, without the developer naming it (npm run NAME).
type installHook struct {
	name string
	// dependency: the script also runs for an installed dependency, not only
	// for the project's own packages.
	dependency bool
	when       string // the commands that run it, shown in the evidence
}

// installHooks lists every lifecycle script an install, rebuild, pack or
// publish runs, with its pre and post forms, for npm, yarn, pnpm and bun.
// DEP003 reports each one, and DEP004, DEP005 and DEP012 to DEP014 scan the
// code each one runs. Derived from the package managers' documentation:
//   - npm: docs.npmjs.com/cli/v11/using-npm/scripts, "Life Cycle Scripts" and
//     "Life Cycle Operation Order": install and ci run preinstall, install,
//     postinstall, prepublish, preprepare, prepare, postprepare; rebuild runs
//     preinstall, install, postinstall, prepare; pack runs prepack, prepare,
//     postpack; publish runs prepublishOnly, prepack, prepare, postpack,
//     publish, postpublish; dependencies runs after any change to
//     node_modules; cache add and diff run prepare. A dependency runs only
//     preinstall, install and postinstall; a git dependency is packed first
//     (prepare, prepack, postpack run in its clone). npm 7 and later run no
//     uninstall scripts.
//   - yarn 1: classic.yarnpkg.com/en/docs/package-json ("scripts"): install
//     runs preinstall, install, postinstall, prepublish, prepare.
//   - yarn 2 and later: yarnpkg.com/advanced/lifecycle-scripts: preinstall,
//     install, postinstall (dependencies and the project), prepack and postpack
//     (yarn pack, and git dependencies), prepublish (yarn npm publish).
//   - pnpm: pnpm.io/scripts: pnpm:devPreinstall (the root package.json, on a
//     local pnpm install, before any dependency), then npm's install scripts
//     and prepare; the .pnpmfile.cjs hooks are code, not scripts (pnpmfiles,
//     pnpm.io/pnpmfile).
//   - bun: bun.sh/docs/pm/lifecycle: install runs preinstall, install,
//     postinstall, preprepare, prepare, postprepare; a dependency's scripts
//     only when it is in trustedDependencies or bun's default list.
var installHooks = []installHook{
	{"preinstall", true, "npm, yarn, pnpm and bun install; npm rebuild"},
	{"install", true, "npm, yarn, pnpm and bun install; npm rebuild"},
	{"postinstall", true, "npm, yarn, pnpm and bun install; npm rebuild"},
	{"pnpm:devPreinstall", false, "pnpm install, before any dependency"},
	{"prepublish", false, "npm install and ci, yarn 1 install, yarn npm publish"},
	{"preprepare", false, "npm install and ci, bun install"},
	{"prepare", false, "npm, yarn 1, pnpm and bun install; npm pack, publish and rebuild; a git dependency's install"},
	{"postprepare", false, "npm install and ci, bun install"},
	{"dependencies", false, "npm, after any change to node_modules"},
	{"prepack", false, "npm and yarn pack and publish; a git dependency's install"},
	{"postpack", false, "npm and yarn pack and publish; a git dependency's install"},
	{"prepublishOnly", false, "npm publish"},
	{"publish", false, "npm publish"},
	{"postpublish", false, "npm publish"},
}

// pnpmfiles are the files pnpm loads as code on every install (readPackage,
// afterAllResolved and the other hooks of pnpm.io/pnpmfile; .pnpmfile.mjs
// from pnpm 11), found next to the lockfile, at the workspace's root.
var pnpmfiles = []string{".pnpmfile.cjs", ".pnpmfile.mjs"}

// hookNames lists the hooks that run for a dependency (installed) or for one
// of the project's own packages, in installHooks order.
func hookNames(installed bool) []string {
	var out []string
	for _, h := range installHooks {
		if h.dependency || !installed {
			out = append(out, h.name)
		}
	}
	return out
}

// hookOf returns the installHooks entry named name.
func hookOf(name string) (installHook, bool) {
	for _, h := range installHooks {
		if h.name == name {
			return h, true
		}
	}
	return installHook{}, false
}
