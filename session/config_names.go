package session

import "github.com/shadow-sandbox/shadow/session/config"

// The configuration of a run, as the session's callers name it (package config reads and checks
// it).
type (
	Config       = config.Config
	LoadedConfig = config.LoadedConfig
)

// ProjectConfigName is the project's own configuration file (config.ProjectConfigName).
const ProjectConfigName = config.ProjectConfigName

// TrustLevels are the trust profiles a configuration may name (config.TrustLevels).
var TrustLevels = config.TrustLevels

// LoadConfig reads the user's and the project's configuration (config.LoadConfig).
func LoadConfig(userPath, project, stateRoot string) (LoadedConfig, error) {
	return config.LoadConfig(userPath, project, stateRoot)
}

// UserConfigPath is where the user's configuration lives (config.UserConfigPath).
func UserConfigPath() (string, error) { return config.UserConfigPath() }

// TrustConfig records the project configuration at path as trusted (config.TrustConfig).
func TrustConfig(stateRoot, path string) (string, error) { return config.TrustConfig(stateRoot, path) }

// ParsePorts reads a list of ports (config.ParsePorts).
func ParsePorts(s string) ([]int, error) { return config.ParsePorts(s) }

// ParseSize reads a size such as "2G" (config.ParseSize).
func ParseSize(s string) (int64, error) { return config.ParseSize(s) }
