// Package assets holds the files shadow embeds: the demo project and demo agent, and the AppArmor
// profile template that `shadow doctor` prints for Ubuntu 24.04 and later.
package assets

import "embed"

// FS is the embedded tree: demo/ (project/, agent.sh) and apparmor/.
//
//go:embed all:demo apparmor
var FS embed.FS

// AppArmorTemplate is the AppArmor profile for the shadow binary, with @SHADOW_PATH@ standing for
// the binary's path.
//
//go:embed apparmor/shadow.apparmor
var AppArmorTemplate string
