package diffview

import (
	"strings"
	"sync"

	"github.com/alecthomas/chroma/v2"
)

// The review highlights each line with chroma's regex lexer engine and the
// languages below, rather than with chroma's lexers package: that package
// registers some 250 lexers while the process starts, which cost every
// process of the shadow binary (the jail's PID 1 too) 15–50 ms before main.
// The view only tells comments, strings, numbers, keywords, types and
// function names apart, line by line, which a small table does as well.

// language is one syntax: the files it applies to and its lexical parts.
type language struct {
	name     string
	files    []string // filename globs
	keywords []string
	types    []string    // builtin types and constants
	line     []string    // line comment openers
	block    [][2]string // block comment delimiters
	quotes   string      // string delimiters
	raw      string      // delimiters of strings without escapes
	triple   bool        // Python's """ and ''' strings
	hashVars bool        // $name and ${name} variables (shells, make)
}

var (
	cKeywords = []string{"break", "case", "continue", "default", "do", "else", "for", "goto", "if",
		"return", "sizeof", "static", "struct", "switch", "typedef", "union", "while", "extern",
		"const", "volatile", "inline", "enum", "register", "restrict"}
	cTypes = []string{"char", "short", "int", "long", "float", "double", "void", "signed",
		"unsigned", "bool", "size_t", "ssize_t", "int8_t", "int16_t", "int32_t", "int64_t",
		"uint8_t", "uint16_t", "uint32_t", "uint64_t", "NULL", "true", "false", "nullptr"}
	jsKeywords = []string{"async", "await", "break", "case", "catch", "class", "const", "continue",
		"debugger", "default", "delete", "do", "else", "export", "extends", "finally", "for", "from",
		"function", "if", "import", "in", "instanceof", "let", "new", "of", "return", "static",
		"super", "switch", "this", "throw", "try", "typeof", "var", "void", "while", "with", "yield",
		"interface", "type", "implements", "enum", "declare", "namespace", "readonly", "as",
		"private", "public", "protected", "abstract", "keyof"}
	jsTypes = []string{"true", "false", "null", "undefined", "NaN", "Infinity", "string", "number",
		"boolean", "any", "unknown", "never", "object", "bigint", "symbol", "Promise", "Array",
		"Object", "String", "Number", "Error", "Map", "Set", "require", "module", "exports",
		"process", "console"}
)

var languages = []language{
	{name: "Go", files: []string{"*.go"},
		keywords: []string{"break", "case", "chan", "const", "continue", "default", "defer", "else",
			"fallthrough", "for", "func", "go", "goto", "if", "import", "interface", "map", "package",
			"range", "return", "select", "struct", "switch", "type", "var"},
		types: []string{"bool", "byte", "complex64", "complex128", "error", "float32", "float64",
			"int", "int8", "int16", "int32", "int64", "rune", "string", "uint", "uint8", "uint16",
			"uint32", "uint64", "uintptr", "any", "comparable", "true", "false", "nil", "iota",
			"append", "cap", "clear", "close", "copy", "delete", "len", "make", "max", "min", "new",
			"panic", "print", "println", "recover"},
		line: []string{"//"}, block: [][2]string{{"/*", "*/"}}, quotes: `"'`, raw: "`"},
	{name: "JavaScript", files: []string{"*.js", "*.jsx", "*.mjs", "*.cjs", "*.ts", "*.tsx", "*.mts", "*.cts"},
		keywords: jsKeywords, types: jsTypes,
		line: []string{"//"}, block: [][2]string{{"/*", "*/"}}, quotes: "\"'`"},
	{name: "Python", files: []string{"*.py", "*.pyi", "*.pyw", "SConstruct", "SConscript", "*.bzl", "BUILD", "BUILD.bazel", "WORKSPACE"},
		keywords: []string{"and", "as", "assert", "async", "await", "break", "class", "continue", "def",
			"del", "elif", "else", "except", "finally", "for", "from", "global", "if", "import", "in",
			"is", "lambda", "nonlocal", "not", "or", "pass", "raise", "return", "try", "while", "with",
			"yield", "match", "case"},
		types: []string{"True", "False", "None", "self", "cls", "int", "float", "str", "bytes", "bool",
			"list", "dict", "set", "tuple", "object", "type", "len", "print", "range", "open",
			"isinstance", "super", "Exception"},
		line: []string{"#"}, quotes: `"'`, triple: true},
	{name: "Rust", files: []string{"*.rs"},
		keywords: []string{"as", "async", "await", "break", "const", "continue", "crate", "dyn", "else",
			"enum", "extern", "fn", "for", "if", "impl", "in", "let", "loop", "match", "mod", "move",
			"mut", "pub", "ref", "return", "static", "struct", "super", "trait", "type", "unsafe",
			"use", "where", "while"},
		types: []string{"bool", "char", "str", "u8", "u16", "u32", "u64", "u128", "usize", "i8", "i16",
			"i32", "i64", "i128", "isize", "f32", "f64", "String", "Vec", "Option", "Result", "Box",
			"Some", "None", "Ok", "Err", "Self", "self", "true", "false"},
		line: []string{"//"}, block: [][2]string{{"/*", "*/"}}, quotes: `"`},
	{name: "C", files: []string{"*.c", "*.h", "*.cc", "*.cpp", "*.cxx", "*.hpp", "*.hh", "*.hxx", "*.m", "*.mm"},
		keywords: append([]string{"class", "namespace", "template", "typename", "public", "private",
			"protected", "virtual", "override", "new", "delete", "using", "try", "catch", "throw",
			"auto", "constexpr", "noexcept", "this", "operator", "#include", "#define", "#if",
			"#ifdef", "#ifndef", "#endif", "#else", "#elif", "#pragma", "#undef"}, cKeywords...),
		types: cTypes, line: []string{"//"}, block: [][2]string{{"/*", "*/"}}, quotes: `"'`},
	{name: "Java", files: []string{"*.java", "*.kt", "*.kts", "*.scala", "*.groovy", "*.gradle", "*.cs", "*.swift", "*.dart"},
		keywords: []string{"abstract", "break", "case", "catch", "class", "continue", "default", "do",
			"else", "enum", "extends", "final", "finally", "for", "if", "implements", "import",
			"instanceof", "interface", "new", "package", "private", "protected", "public", "return",
			"static", "super", "switch", "synchronized", "this", "throw", "throws", "try", "while",
			"fun", "val", "var", "when", "object", "data", "sealed", "override", "open", "is", "in",
			"namespace", "using", "func", "let", "struct", "protocol", "extension", "guard", "def",
			"async", "await", "yield", "get", "set", "internal", "companion", "init", "self"},
		types: []string{"boolean", "byte", "char", "double", "float", "int", "long", "short", "void",
			"String", "Integer", "Boolean", "Object", "List", "Map", "Int", "Long", "Unit", "Any",
			"Bool", "Double", "string", "bool", "true", "false", "null", "nil"},
		line: []string{"//"}, block: [][2]string{{"/*", "*/"}}, quotes: `"'`},
	{name: "Ruby", files: []string{"*.rb", "*.rake", "Rakefile", "Gemfile", "*.gemspec", "Podfile"},
		keywords: []string{"alias", "and", "begin", "break", "case", "class", "def", "defined?", "do",
			"else", "elsif", "end", "ensure", "for", "if", "in", "module", "next", "not", "or", "redo",
			"rescue", "retry", "return", "self", "super", "then", "undef", "unless", "until", "when",
			"while", "yield", "require", "require_relative", "attr_accessor", "attr_reader"},
		types: []string{"true", "false", "nil"}, line: []string{"#"}, quotes: `"'`},
	{name: "PHP", files: []string{"*.php"},
		keywords: []string{"abstract", "as", "break", "case", "catch", "class", "const", "continue",
			"default", "do", "echo", "else", "elseif", "extends", "final", "finally", "fn", "for",
			"foreach", "function", "if", "implements", "interface", "namespace", "new", "private",
			"protected", "public", "return", "static", "switch", "throw", "trait", "try", "use",
			"while", "require", "require_once", "include", "include_once"},
		types: []string{"true", "false", "null", "array", "int", "string", "bool", "float", "void"},
		line:  []string{"//", "#"}, block: [][2]string{{"/*", "*/"}}, quotes: `"'`, hashVars: true},
	{name: "Shell", files: []string{"*.sh", "*.bash", "*.zsh", "*.ksh", ".bashrc", ".bash_profile", ".profile", ".zshrc", "*.bats", "PKGBUILD"},
		keywords: []string{"if", "then", "else", "elif", "fi", "for", "while", "until", "do", "done",
			"case", "esac", "in", "function", "return", "local", "export", "readonly", "declare",
			"set", "unset", "shift", "exit", "source", "eval", "exec", "trap", "select"},
		types: []string{"echo", "printf", "read", "cd", "test", "true", "false", "curl", "wget",
			"chmod", "sudo", "rm", "cp", "mv", "mkdir", "cat", "grep", "sed", "awk", "sh", "bash"},
		line: []string{"#"}, quotes: `"`, raw: "'", hashVars: true},
	{name: "Makefile", files: []string{"Makefile", "makefile", "GNUmakefile", "*.mk", "*.mak"},
		keywords: []string{"ifeq", "ifneq", "ifdef", "ifndef", "else", "endif", "include", "define",
			"endef", "export", "override", ".PHONY"},
		line: []string{"#"}, quotes: `"'`, hashVars: true},
	{name: "Dockerfile", files: []string{"Dockerfile", "Dockerfile.*", "*.dockerfile", "Containerfile"},
		keywords: []string{"FROM", "RUN", "CMD", "LABEL", "EXPOSE", "ENV", "ADD", "COPY", "ENTRYPOINT",
			"VOLUME", "USER", "WORKDIR", "ARG", "ONBUILD", "STOPSIGNAL", "HEALTHCHECK", "SHELL", "AS"},
		line: []string{"#"}, quotes: `"'`, hashVars: true},
	{name: "JSON", files: []string{"*.json", "*.jsonc", "*.json5", "*.webmanifest", ".babelrc", ".eslintrc", "*.lock.json"},
		types: []string{"true", "false", "null"}, line: []string{"//"}, quotes: `"`},
	{name: "YAML", files: []string{"*.yaml", "*.yml", ".clang-format"},
		types: []string{"true", "false", "null", "yes", "no", "on", "off", "True", "False"},
		line:  []string{"#"}, quotes: `"'`},
	{name: "TOML", files: []string{"*.toml", "Cargo.lock", "Pipfile", "*.ini", "*.cfg", "*.conf", ".editorconfig", ".npmrc", ".gitconfig"},
		types: []string{"true", "false"}, line: []string{"#"}, quotes: `"'`},
	{name: "Lua", files: []string{"*.lua"},
		keywords: []string{"and", "break", "do", "else", "elseif", "end", "for", "function", "goto",
			"if", "in", "local", "not", "or", "repeat", "return", "then", "until", "while"},
		types: []string{"true", "false", "nil", "self", "require", "print", "pairs", "ipairs"},
		line:  []string{"--"}, quotes: `"'`},
	{name: "SQL", files: []string{"*.sql"},
		keywords: []string{"SELECT", "FROM", "WHERE", "INSERT", "INTO", "VALUES", "UPDATE", "SET",
			"DELETE", "CREATE", "TABLE", "DROP", "ALTER", "ADD", "INDEX", "JOIN", "LEFT", "RIGHT",
			"INNER", "OUTER", "ON", "AND", "OR", "NOT", "NULL", "AS", "ORDER", "BY", "GROUP",
			"HAVING", "LIMIT", "PRIMARY", "KEY", "REFERENCES", "UNIQUE", "DEFAULT", "BEGIN",
			"COMMIT", "select", "from", "where", "insert", "into", "values", "update", "set",
			"delete", "create", "table", "drop", "alter", "join", "on", "and", "or", "not", "as",
			"order", "by", "group", "limit"},
		types: []string{"INTEGER", "INT", "TEXT", "VARCHAR", "BOOLEAN", "TIMESTAMP", "SERIAL",
			"BIGINT", "REAL", "BLOB", "TRUE", "FALSE", "integer", "text", "varchar", "boolean"},
		line: []string{"--"}, block: [][2]string{{"/*", "*/"}}, quotes: `'"`},
	{name: "CSS", files: []string{"*.css", "*.scss", "*.less"},
		keywords: []string{"@media", "@import", "@keyframes", "@font-face", "@supports", "@mixin",
			"@include", "@extend", "@use", "!important"},
		line: []string{"//"}, block: [][2]string{{"/*", "*/"}}, quotes: `"'`},
}

// registry is built on first use, not at start.
var registry = sync.OnceValue(func() *chroma.LexerRegistry {
	r := chroma.NewLexerRegistry()
	for _, l := range languages {
		r.Register(chroma.MustNewLexer(&chroma.Config{Name: l.name, Filenames: l.files}, l.rules))
	}
	return r
})

// lexerFor returns the lexer of a file name, or nil when no language of
// the table matches it.
func lexerFor(path string) chroma.Lexer {
	return registry().Match(path)
}

// rules are the language's lexer rules: one state, matched line by line.
func (l language) rules() chroma.Rules {
	var rs []chroma.Rule
	for _, d := range l.block {
		// A block comment closes on its line, or runs to the end of it.
		rs = append(rs, chroma.Rule{Pattern: quoteMeta(d[0]) + `.*?(` + quoteMeta(d[1]) + `|$)`, Type: chroma.CommentMultiline})
	}
	for _, c := range l.line {
		rs = append(rs, chroma.Rule{Pattern: lineComment(c), Type: chroma.CommentSingle})
	}
	if l.triple {
		rs = append(rs,
			chroma.Rule{Pattern: `[rRbBfFuU]{0,2}"""(.*?"""|.*$)`, Type: chroma.LiteralStringDoc},
			chroma.Rule{Pattern: `[rRbBfFuU]{0,2}'''(.*?'''|.*$)`, Type: chroma.LiteralStringDoc})
	}
	for _, q := range l.quotes {
		e := quoteMeta(string(q))
		rs = append(rs, chroma.Rule{Pattern: e + `(\\.|[^\\` + e + `])*(` + e + `|$)`, Type: chroma.LiteralString})
	}
	for _, q := range l.raw {
		e := quoteMeta(string(q))
		rs = append(rs, chroma.Rule{Pattern: e + `[^` + e + `]*(` + e + `|$)`, Type: chroma.LiteralString})
	}
	if l.hashVars {
		rs = append(rs, chroma.Rule{Pattern: `\$(\{[^}]*\}|\([^)]*\)|[A-Za-z_][A-Za-z0-9_]*|[0-9@*#?$!-])`, Type: chroma.NameVariable})
	}
	rs = append(rs,
		chroma.Rule{Pattern: `\b(0[xX][0-9a-fA-F_]+|0[bB][01_]+|0[oO][0-7_]+|[0-9][0-9_]*(\.[0-9_]+)?([eE][+-]?[0-9]+)?)[a-zA-Z]*\b`, Type: chroma.LiteralNumber})
	if len(l.keywords) > 0 {
		rs = append(rs, chroma.Rule{Pattern: words(l.keywords), Type: chroma.Keyword})
	}
	if len(l.types) > 0 {
		rs = append(rs, chroma.Rule{Pattern: words(l.types), Type: chroma.KeywordType})
	}
	rs = append(rs,
		chroma.Rule{Pattern: `[A-Za-z_][A-Za-z0-9_]*(?=\s*\()`, Type: chroma.NameFunction},
		chroma.Rule{Pattern: `[A-Za-z_][A-Za-z0-9_]*`, Type: chroma.Name},
		chroma.Rule{Pattern: `\s+`, Type: chroma.TextWhitespace},
		chroma.Rule{Pattern: `.`, Type: chroma.Text},
	)
	return chroma.Rules{"root": rs}
}

// lineComment matches a comment from opener to the end of the line. A "#"
// only opens one at the start of a word, so that "a#b" and "$#" are not
// comments.
func lineComment(opener string) string {
	if opener == "#" {
		return `(?<![\w$#])#.*$`
	}
	return quoteMeta(opener) + `.*$`
}

// words matches any of ws as a whole word (words may start with "#", "@" or
// "." or end with "?", which \b would not bound).
func words(ws []string) string {
	return `(?<![\w#@.])` + chroma.Words(`(`, `)`, append([]string(nil), ws...)...) + `(?![\w?])`
}

func quoteMeta(s string) string {
	var b strings.Builder
	for _, r := range s {
		if strings.ContainsRune(`\.+*?()|[]{}^$#`, r) {
			b.WriteByte('\\')
		}
		b.WriteRune(r)
	}
	return b.String()
}
