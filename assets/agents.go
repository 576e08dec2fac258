package assets

import "embed"

// Agents holds the agent presets, agents/<name>.toml, read by sandbox/preset.
//
//go:embed agents
var Agents embed.FS
