package redact

import "strings"

// Secrets on command lines. A tool's documented password flag takes the
// password as its argument, glued (mysql -pX) or separate (sshpass -p X);
// a user:password argument (curl -u, httpie -a) holds it after the colon;
// a few tools take credentials positionally (mc alias set NAME URL KEY
// SECRET). Short flags mean different things to different tools (-p is a
// port to docker run and a parent to mkdir), so each short flag counts only
// on a line that runs a tool documented to take a password with it. Long
// flags (--password, --token, --api-key) are key=value territory and are
// handled by findKeyValues.

type passwordFlag struct {
	flag  string
	glued bool     // the password may follow the flag with no space
	tools []string // words on the line that name a tool taking a password with this flag
	sep   byte     // for user-and-password flags: what splits them, ':' when 0
}

var passwordFlags = []passwordFlag{
	{"-p", true, []string{"mysql", "mariadb", "mysqldump", "mysqladmin", "mysqlsh", "mongo", "mongosh", "mongodump", "mongorestore", "mongoexport", "mongoimport"}, 0},
	{"-p", false, []string{"sshpass", " login", "twine", "-u "}, 0},
	{"-P", false, []string{"sqlcmd", "bcp", "isql", "osql"}, 0},
	{"-a", false, []string{"redis-cli", "keydb-cli", "valkey-cli"}, 0},
	{"-w", false, []string{"ldapsearch", "ldapmodify", "ldapadd", "ldapdelete", "ldapwhoami", "ldappasswd"}, 0},
	{"-k", false, []string{"openssl enc", "openssl aes", "openssl des"}, 0},
}

// userPasswordFlags take user:password.
var userPasswordFlags = []passwordFlag{
	{"-u ", false, nil, 0}, {"--user ", false, nil, 0}, {"--user=", false, nil, 0}, {"-U ", false, nil, 0},
	{"--auth ", false, nil, 0}, {"--auth=", false, nil, 0}, {"--proxy-user ", false, nil, 0}, {"--proxy-user=", false, nil, 0},
	{"--basic-auth ", false, nil, 0}, {"--creds ", false, nil, 0},
	{"-a ", false, []string{"http ", "https ", "httpie", "xh "}, 0},                                 // httpie's -a; ls -a is not
	{"-U ", false, []string{"smbclient", "rpcclient", "smbcacls", "smbget", "smbmap", "net "}, '%'}, // Samba's user%password
	{"--user=", false, []string{"smbclient", "rpcclient", "smbcacls", "smbget", "net "}, '%'},
}

func findCLIPasswords(sc *scan) {
	s := sc.s
	// One pass over the flags: a '-' that starts an argument.
	for off := 0; ; {
		i := strings.IndexByte(s[off:], '-')
		if i < 0 {
			break
		}
		p := off + i
		off = p + 1
		if p > 0 && s[p-1] != ' ' && s[p-1] != '\t' && s[p-1] != '"' {
			continue
		}
		for k := range passwordFlags {
			if strings.HasPrefix(s[p:], passwordFlags[k].flag) {
				passwordFlagValue(sc, p, &passwordFlags[k])
			}
		}
		for k := range userPasswordFlags {
			if strings.HasPrefix(s[p:], userPasswordFlags[k].flag) {
				userPasswordValue(sc, p, &userPasswordFlags[k])
			}
		}
	}
	findPositionalCredentials(sc)
}

// passwordFlagValue masks the argument of the password flag at p.
func passwordFlagValue(sc *scan, p int, pf *passwordFlag) {
	s := sc.s
	if !sc.lineHas(p, pf.tools) {
		return
	}
	v := p + len(pf.flag)
	switch {
	case v < len(s) && s[v] == ' ':
		v++
	case pf.glued && v < len(s) && s[v] > ' ' && s[v] != '=' && s[v] != '-':
		// -pSECRET, -p'SECRET', -p"SECRET"
	default:
		return // -p=... is key=value territory; -p alone prompts
	}
	vs, ve := readArg(s, v)
	if vs >= ve || s[vs] == '-' || isPlaceholderAt(s, vs) || trivialValue(s[vs:ve]) || allPortChars(s[vs:ve]) {
		return
	}
	sc.add(vs, ve, "password")
}

// userPasswordValue masks the password of the user:password argument of
// the flag at p.
func userPasswordValue(sc *scan, p int, pf *passwordFlag) {
	s := sc.s
	if pf.tools != nil && !sc.lineHas(p, pf.tools) {
		return
	}
	vs, ve := readArg(s, p+len(pf.flag))
	v := s[vs:ve]
	sep := byte(':')
	if pf.sep != 0 {
		sep = pf.sep
	}
	c := strings.IndexByte(v, sep)
	if c <= 0 || c == len(v)-1 || allPortChars(v) || isPlaceholderAt(s, vs+c+1) || strings.Contains(v, "://") {
		return
	}
	if trivialValue(strings.Trim(v[c+1:], `"'`)) || strings.HasPrefix(strings.Trim(v, `"'`), "<") {
		return // "$USER:$PASSWORD", "{{ .user }}:{{ .password }}": a script's variables
	}
	sc.add(vs+c+1, ve, "password")
}

// positionalCredentials are commands whose arguments at fixed positions
// after the command words are an access key and its secret.
var positionalCredentials = []struct {
	command   string
	positions []int // 0-based argument indexes after the command words
}{
	{"mc alias set ", []int{2, 3}},
	{"mc config host add ", []int{2, 3}},
	{"mcli alias set ", []int{2, 3}},
}

func findPositionalCredentials(sc *scan) {
	s, lower := sc.s, sc.lower
	if !strings.Contains(lower, "mc") {
		return
	}
	for _, pc := range positionalCredentials {
		for off := 0; ; {
			i := strings.Index(lower[off:], pc.command)
			if i < 0 {
				break
			}
			p := off + i + len(pc.command)
			off = p
			for arg := 0; arg <= pc.positions[len(pc.positions)-1]; arg++ {
				for p < len(s) && (s[p] == ' ' || s[p] == '\t') {
					p++
				}
				if p >= len(s) || s[p] == '\n' {
					break
				}
				vs, ve := readArg(s, p)
				if ve < len(s) && (s[ve] == '"' || s[ve] == '\'') && vs > p {
					p = ve + 1
				} else {
					p = ve
				}
				if vs < ve && s[vs] == '-' {
					arg-- // a flag, not a positional argument
					continue
				}
				for _, want := range pc.positions {
					if arg == want && vs < ve && !isPlaceholderAt(s, vs) && !trivialValue(s[vs:ve]) {
						sc.add(vs, ve, "token")
					}
				}
			}
		}
	}
}

// findPromptPasswords masks what follows a password prompt echoed into a
// log with its answer: git's "Password for 'https://u@host': X", sudo's
// "[sudo] password for u: X". The prompt ends at "': " or ": ".
func findPromptPasswords(sc *scan) {
	s, lower := sc.s, sc.lower
	for off := 0; ; {
		i := strings.Index(lower[off:], "password for ")
		if i < 0 {
			return
		}
		p := off + i + len("password for ")
		off = p
		le := strings.IndexByte(s[p:], '\n')
		if le < 0 {
			le = len(s) - p
		}
		c := strings.Index(s[p:p+min(le, 200)], ": ")
		if c < 0 {
			continue
		}
		vs := p + c + 2
		ve := vs
		for ve < len(s) && s[ve] > ' ' {
			ve++
		}
		if v := s[vs:ve]; ve > vs && !isPlaceholderAt(s, vs) && !trivialValue(v) && !proseWord(v) {
			sc.add(vs, ve, "password")
		}
	}
}

// proseWord: a lower-case word a sentence continues with after a colon
// ("password for x: authentication failed"), not an answer to a prompt.
func proseWord(v string) bool {
	return strings.Trim(v, "abcdefghijklmnopqrstuvwxyz") == "" && len(v) > 3 && !(len(v) >= 6 && strings.IndexAny(v, "aeiou") < 0)
}
