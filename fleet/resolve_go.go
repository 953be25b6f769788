package fleet

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
)

// The pure-Go resolver: an interpreter of the parsed config files that
// follows OpenSSH 9.2 (Debian) readconf.c and ssh.c main() closely enough
// that its result equals `ssh -G` for the keywords fleet uses. It is used
// when no ssh binary is installed, and tested against `ssh -G`.

// Values of SSH_CANONICALISE_*.
const (
	canonNo = iota
	canonYes
	canonAlways
)

// identityFile is one IdentityFile value and whether it came from a user
// configuration (OpenSSH de-duplicates per origin).
type identityFile struct {
	path         string
	userProvided bool
}

// goOptions is the subset of OpenSSH's Options that fleet resolves. Unset
// values are nil or -1, as in readconf.c; first value wins.
type goOptions struct {
	hostname, user, hostKeyAlias, identityAgent, proxyCommand, ignoredUnknown *string

	port                  int
	identityFiles         []identityFile
	identitiesOnly        int
	hashKnownHosts        int
	batchMode             int
	strictHostKeyChecking string // printed form; "" when unset
	connectTimeout        int
	serverAliveInterval   int
	serverAliveCountMax   int
	userKnownHosts        []string
	globalKnownHosts      []string

	jumpHost, jumpUser, jumpExtra *string
	jumpPort                      int

	canonicalizeHostname      int
	canonicalizeMaxDots       int
	canonicalizeFallbackLocal int
	canonicalDomains          []string
	addressFamily             int
}

func newGoOptions() *goOptions {
	return &goOptions{
		port: -1, identitiesOnly: -1, hashKnownHosts: -1, batchMode: -1,
		connectTimeout: -1, serverAliveInterval: -1, serverAliveCountMax: -1,
		jumpPort: -1, canonicalizeHostname: -1, canonicalizeMaxDots: -1,
		canonicalizeFallbackLocal: -1, addressFamily: -1,
	}
}

// goRequest is one resolution: the destination and the command-line
// options a ProxyJump hop gets (ssh -l USER -p PORT -J JUMPS HOST).
type goRequest struct {
	host string
	user string // "" when not given
	port int    // -1 when not given
	jump string // "" when not given
}

// topFile is one configuration file read at the top level.
type topFile struct {
	file     *cfgFile
	userConf bool
}

// goEnv is everything outside the config files that resolution reads.
type goEnv struct {
	home       string
	localUser  string
	uid        int
	thisHost   string
	getenv     func(string) (string, bool)
	lookupHome func(string) (string, error)
	// lookupHost resolves a name for CanonicalizeHostname; nil disables.
	lookupHost func(ctx context.Context, name string) bool
}

// interp runs one resolution.
type interp struct {
	ctx          context.Context
	env          *goEnv
	o            *goOptions
	host         string // name matched by Host lines
	originalHost string // destination as typed (Match originalhost, %n)
	finalPass    bool
	wantFinal    bool
	// execFn runs a Match exec command; nil means execInShell.
	execFn func(cmd string) (int, error)
}

// configError is a problem in a config line.
func lineErr(f *cfgFile, ln *cfgLine, format string, a ...any) error {
	return fmt.Errorf("%s line %d: %s", f.path, ln.num, fmt.Sprintf(format, a...))
}

// resolveGo resolves req over files like `ssh -G` would.
func resolveGo(ctx context.Context, files []topFile, env *goEnv, req goRequest) (Resolved, error) {
	if ctx == nil {
		ctx = context.Background()
	}
	o := newGoOptions()
	if req.user != "" {
		if !validRemoteUser(req.user) {
			return Resolved{}, errors.New("remote username contains invalid characters")
		}
		u := req.user
		o.user = &u
	}
	if req.port > 0 {
		o.port = req.port
	}
	if req.jump != "" {
		if err := parseJump(req.jump, o, true, true); err != nil {
			return Resolved{}, fmt.Errorf("invalid -J argument: %w", err)
		}
	}
	host := req.host
	if !validHostname(host) {
		return Resolved{}, errors.New("hostname contains invalid characters")
	}
	in := &interp{ctx: ctx, env: env, o: o, host: host, originalHost: host}
	if err := in.readAll(files); err != nil {
		return Resolved{}, err
	}
	// fill_default_options_for_canonicalization
	if o.canonicalizeMaxDots == -1 {
		o.canonicalizeMaxDots = 1
	}
	if o.canonicalizeFallbackLocal == -1 {
		o.canonicalizeFallbackLocal = 1
	}
	if o.canonicalizeHostname == -1 {
		o.canonicalizeHostname = canonNo
	}
	if o.hostname != nil {
		h, err := percentDollarExpand(*o.hostname, tokens{'h': host}, false, nil)
		if err != nil {
			return Resolved{}, fmt.Errorf("HostName %q: %w", *o.hostname, err)
		}
		host = h
		o.hostname = &h
	}
	af := afAny
	if o.addressFamily > 0 {
		af = o.addressFamily
	}
	wasAddr := isAddrFast(host)
	if !wasAddr {
		_, wasAddr = numericHost(host, af)
	}
	if !wasAddr {
		host = asciiLower(host)
	}
	if o.canonicalizeHostname != canonNo || wasAddr {
		h, err := in.canonicalize(host, af)
		if err != nil {
			return Resolved{}, err
		}
		host = h
	}
	if o.canonicalizeHostname != canonNo {
		in.wantFinal = true
	}
	if in.wantFinal {
		h := host
		o.hostname = &h
		in.host = host
		in.finalPass = true
		if err := in.readAll(files); err != nil {
			return Resolved{}, err
		}
	}
	return in.finish(host)
}

// readAll is process_config_files for one pass.
func (in *interp) readAll(files []topFile) error {
	for _, tf := range files {
		if tf.file == nil {
			continue
		}
		active := true
		if err := in.readFile(tf.file, tf.userConf, false, &active); err != nil {
			return err
		}
	}
	return nil
}

func (in *interp) readFile(f *cfgFile, userConf, neverMatch bool, active *bool) error {
	for i := range f.lines {
		if err := in.line(f, &f.lines[i], userConf, neverMatch, active); err != nil {
			return err
		}
	}
	return nil
}

// knownKeywords are the keywords OpenSSH accepts (9.2, Debian's additions
// and newer upstream releases). The ones fleet does not resolve are
// accepted and ignored.
var knownKeywords = func() map[string]bool {
	m := map[string]bool{}
	for _, k := range strings.Fields(`addkeystoagent addressfamily afstokenpassing batchmode bindaddress
		bindinterface canonicaldomains canonicalizefallbacklocal canonicalizehostname canonicalizemaxdots
		canonicalizepermittedcnames casignaturealgorithms certificatefile challengeresponseauthentication
		channeltimeout checkhostip cipher ciphers clearallforwardings compression compressionlevel
		connectionattempts connecttimeout controlmaster controlpath controlpersist dsaauthentication
		dynamicforward enableescapecommandline enablesshkeysign escapechar exitonforwardfailure
		fallbacktorsh fingerprinthash forkafterauthentication forwardagent forwardx11 forwardx11timeout
		forwardx11trusted gatewayports globalknownhostsfile globalknownhostsfile2 gssapiauthentication
		gssapiclientidentity gssapidelegatecredentials gssapikexalgorithms gssapikeyexchange
		gssapirenewalforcesrekey gssapiserveridentity gssapitrustdns hashknownhosts host
		hostbasedacceptedalgorithms hostbasedauthentication hostbasedkeytypes hostkeyalgorithms
		hostkeyalias hostname identitiesonly identityagent identityfile identityfile2 ignoreunknown
		include ipqos kbdinteractiveauthentication kbdinteractivedevices keepalive
		kerberosauthentication kerberostgtpassing kexalgorithms knownhostscommand localcommand
		localforward loglevel logverbose macs match nohostauthenticationforlocalhost
		numberofpasswordprompts obscurekeystroketiming passwordauthentication permitlocalcommand
		permitremoteopen pkcs11provider port preferredauthentications protocol protocolkeepalives
		proxycommand proxyjump proxyusefdpass pubkeyacceptedalgorithms pubkeyacceptedkeytypes
		pubkeyauthentication refuseconnection rekeylimit remotecommand remoteforward requesttty
		requiredrsasize revokedhostkeys rhostsauthentication rhostsrsaauthentication rsaauthentication
		securitykeyprovider sendenv serveralivecountmax serveraliveinterval sessiontype setenv
		setuptimeout skeyauthentication smartcarddevice stdinnull streamlocalbindmask
		streamlocalbindunlink stricthostkeychecking syslogfacility tag tcpkeepalive tisauthentication
		tunnel tunneldevice updatehostkeys useprivilegedport user userknownhostsfile
		userknownhostsfile2 useroaming usersh verifyhostkeydns versionaddendum visualhostkey
		warnweakcrypto xauthlocation`) {
		m[k] = true
	}
	return m
}()

// line is process_config_line_depth for the keywords fleet resolves.
func (in *interp) line(f *cfgFile, ln *cfgLine, userConf, neverMatch bool, active *bool) error {
	o := in.o
	kw := ln.keyword
	if ln.rest == "" {
		return lineErr(f, ln, "no argument after keyword %q", kw)
	}
	if !knownKeywords[kw] {
		if o.ignoredUnknown != nil && matchPatternList(kw, *o.ignoredUnknown, true) == 1 {
			return nil
		}
		return lineErr(f, ln, "Bad configuration option: %s", kw)
	}
	if ln.argErr != nil {
		return lineErr(f, ln, "invalid quotes")
	}
	args := ln.args
	next := func() (string, bool) {
		if len(args) == 0 {
			return "", false
		}
		a := args[0]
		args = args[1:]
		return a, true
	}
	str := func(dst **string) error {
		a, ok := next()
		if !ok || a == "" {
			return lineErr(f, ln, "Missing argument.")
		}
		if *active && *dst == nil {
			*dst = &a
		}
		return nil
	}
	flag := func(dst *int) error {
		a, _ := next()
		v := -1
		switch asciiLower(a) {
		case "yes", "true":
			v = 1
		case "no", "false":
			v = 0
		}
		if v < 0 {
			return lineErr(f, ln, "unsupported option %q.", a)
		}
		if *active && *dst == -1 {
			*dst = v
		}
		return nil
	}
	timeVal := func(dst *int) error {
		a, ok := next()
		if !ok || a == "" {
			return lineErr(f, ln, "missing time value.")
		}
		v := -1
		if a != "none" {
			if v = convtime(a); v == -1 {
				return lineErr(f, ln, "invalid time value.")
			}
		}
		if *active && *dst == -1 {
			*dst = v
		}
		return nil
	}
	intVal := func(dst *int) error {
		a, _ := next()
		v, e := atoiErr(a)
		if e != "" {
			return lineErr(f, ln, "integer value %s.", e)
		}
		if *active && *dst == -1 {
			*dst = v
		}
		return nil
	}
	strArray := func(dst *[]string) error {
		i := 0
		wasEmpty := len(*dst) == 0
		for len(args) > 0 {
			a, _ := next()
			if a == "" {
				return lineErr(f, ln, "keyword %s empty argument", kw)
			}
			if strings.EqualFold(a, "none") && (i > 0 || len(args) > 0) {
				return lineErr(f, ln, "keyword %s \"none\" argument must appear alone.", kw)
			}
			i++
			if *active && wasEmpty {
				if len(*dst) >= maxHostsFiles {
					return lineErr(f, ln, "too many %s entries.", kw)
				}
				*dst = append(*dst, a)
			}
		}
		return nil
	}

	var err error
	switch kw {
	case "host":
		*active = false
		for len(args) > 0 {
			a, _ := next()
			if a == "" {
				return lineErr(f, ln, "keyword %s empty argument", kw)
			}
			if neverMatch {
				args = nil
				break
			}
			negated := strings.HasPrefix(a, "!")
			if negated {
				a = a[1:]
			}
			if matchPattern(in.host, a) {
				if negated {
					*active = false
					args = nil
					break
				}
				*active = true
			}
		}
	case "match":
		v, rest, err := in.matchLine(ln.rest, f, ln)
		if err != nil {
			return err
		}
		*active = v && !neverMatch
		if rest == "" {
			args = nil
		}
	case "include":
		for _, inc := range ln.includes {
			if inc.err != nil {
				return lineErr(f, ln, "%v", inc.err)
			}
		}
		oactive := *active
		for _, inc := range ln.includes {
			for _, child := range inc.files {
				if err := in.readFile(child, userConf, neverMatch || !oactive, active); err != nil {
					return err
				}
				*active = oactive
			}
		}
		args = nil
	case "hostname":
		err = str(&o.hostname)
	case "user":
		err = str(&o.user)
	case "hostkeyalias":
		err = str(&o.hostKeyAlias)
	case "ignoreunknown":
		err = str(&o.ignoredUnknown)
	case "port":
		a, ok := next()
		if !ok || a == "" {
			return lineErr(f, ln, "Missing argument.")
		}
		v := a2port(a)
		if v <= 0 {
			return lineErr(f, ln, "Bad port '%s'.", a)
		}
		if *active && o.port == -1 {
			o.port = v
		}
	case "identityfile", "identityfile2":
		a, ok := next()
		if !ok || a == "" {
			return lineErr(f, ln, "Missing argument.")
		}
		if *active {
			if len(o.identityFiles) >= maxIdentityFiles {
				return lineErr(f, ln, "Too many identity files specified (max %d).", maxIdentityFiles)
			}
			o.addIdentityFile(a, userConf)
		}
	case "identitiesonly":
		err = flag(&o.identitiesOnly)
	case "hashknownhosts":
		err = flag(&o.hashKnownHosts)
	case "batchmode":
		err = flag(&o.batchMode)
	case "canonicalizefallbacklocal":
		err = flag(&o.canonicalizeFallbackLocal)
	case "stricthostkeychecking":
		a, _ := next()
		v := ""
		switch asciiLower(a) {
		case "true", "yes":
			v = "true"
		case "false", "no", "off":
			v = "false"
		case "ask":
			v = "ask"
		case "accept-new":
			v = "accept-new"
		}
		if v == "" {
			return lineErr(f, ln, "unsupported option %q.", a)
		}
		if *active && o.strictHostKeyChecking == "" {
			o.strictHostKeyChecking = v
		}
	case "canonicalizehostname":
		a, _ := next()
		v := -1
		switch asciiLower(a) {
		case "true", "yes":
			v = canonYes
		case "false", "no":
			v = canonNo
		case "always":
			v = canonAlways
		}
		if v < 0 {
			return lineErr(f, ln, "unsupported option %q.", a)
		}
		if *active && o.canonicalizeHostname == -1 {
			o.canonicalizeHostname = v
		}
	case "addressfamily":
		a, _ := next()
		v := -1
		switch asciiLower(a) {
		case "inet":
			v = afInet
		case "inet6":
			v = afInet6
		case "any":
			v = afAny
		}
		if v < 0 {
			return lineErr(f, ln, "unsupported option %q.", a)
		}
		if *active && o.addressFamily == -1 {
			o.addressFamily = v
		}
	case "canonicalizemaxdots":
		err = intVal(&o.canonicalizeMaxDots)
	case "canonicaldomains":
		wasSet := len(o.canonicalDomains) != 0
		i := 0
		for len(args) > 0 {
			a, _ := next()
			if a == "" {
				return lineErr(f, ln, "keyword %s empty argument", kw)
			}
			if strings.EqualFold(a, "none") && (i > 0 || len(args) > 0) {
				return lineErr(f, ln, "keyword %s \"none\" argument must appear alone.", kw)
			}
			i++
			d, derr := validDomain(a)
			if derr != nil {
				return lineErr(f, ln, "%v", derr)
			}
			if *active && !wasSet {
				o.canonicalDomains = append(o.canonicalDomains, d)
			}
		}
	case "identityagent":
		a, ok := next()
		if !ok || a == "" {
			return lineErr(f, ln, "Missing argument.")
		}
		if _, derr := percentDollarExpand(a, nil, true, in.env.getenv); derr != nil {
			return lineErr(f, ln, "Invalid environment expansion %s.", a)
		}
		if strings.HasPrefix(a, "$") && !strings.HasPrefix(a, "${") && !validEnvName(a[1:]) {
			return lineErr(f, ln, "Invalid environment name %s.", a)
		}
		if *active && o.identityAgent == nil {
			o.identityAgent = &a
		}
	case "userknownhostsfile":
		err = strArray(&o.userKnownHosts)
	case "globalknownhostsfile":
		err = strArray(&o.globalKnownHosts)
	case "connecttimeout":
		err = timeVal(&o.connectTimeout)
	case "serveraliveinterval", "protocolkeepalives", "setuptimeout":
		err = timeVal(&o.serverAliveInterval)
	case "serveralivecountmax":
		err = intVal(&o.serverAliveCountMax)
	case "proxycommand":
		v := strings.TrimLeft(ln.rest, cfgWhitespace+"=")
		// Debian's 9.2 carries the upstream change that makes ProxyJump
		// and ProxyCommand first-match-wins between each other: a
		// ProxyJump sets ProxyCommand to "none", but "ProxyJump none"
		// leaves it free.
		if *active && o.proxyCommand == nil {
			o.proxyCommand = &v
		}
		args = nil
	case "proxyjump":
		v := strings.TrimLeft(ln.rest, cfgWhitespace+"=")
		if perr := parseJump(v, o, false, *active); perr != nil {
			return lineErr(f, ln, "Invalid ProxyJump %q", v)
		}
		args = nil
	default:
		// A keyword fleet does not resolve: accepted, not validated.
		args = nil
	}
	if err != nil {
		return err
	}
	if len(args) > 0 {
		return lineErr(f, ln, "keyword %s extra arguments at end of line", kw)
	}
	return nil
}

// addIdentityFile is readconf.c's add_identity_file (without a dir).
func (o *goOptions) addIdentityFile(path string, userProvided bool) {
	for _, id := range o.identityFiles {
		if id.userProvided == userProvided && id.path == path {
			return
		}
	}
	o.identityFiles = append(o.identityFiles, identityFile{path: path, userProvided: userProvided})
}

// matchLine is readconf.c's match_cfg_line. It returns whether the block
// applies and the unconsumed rest of the line.
func (in *interp) matchLine(cond string, f *cfgFile, ln *cfgLine) (bool, string, error) {
	o := in.o
	port := 22
	if o.port > 0 {
		port = o.port
	}
	ruser := in.env.localUser
	if o.user != nil {
		ruser = *o.user
	}
	var host string
	switch {
	case in.finalPass:
		host = *o.hostname
	case o.hostname != nil:
		h, err := percentDollarExpand(*o.hostname, tokens{'h': in.host}, false, nil)
		if err != nil {
			return false, "", lineErr(f, ln, "HostName %q: %v", *o.hostname, err)
		}
		host = h
	default:
		host = in.host
	}
	bad := func(format string, a ...any) (bool, string, error) {
		return false, "", lineErr(f, ln, "Bad Match condition: %s", fmt.Sprintf(format, a...))
	}
	cp := cond
	result := true
	attributes := 0
	for {
		attrib, rest, ok := strdelim(cp, true)
		if !ok || attrib == "" {
			cp = rest
			if !ok {
				cp = ""
			}
			break
		}
		cp = rest
		if attrib[0] == '#' {
			cp = ""
			break
		}
		oattrib := attrib
		negate := attrib[0] == '!'
		if negate {
			attrib = attrib[1:]
		}
		la := asciiLower(attrib)
		if la == "all" {
			arg, rest2, ok2 := strdelim(cp, true)
			if attributes > 1 || (ok2 && cp != "" && arg != "" && arg[0] != '#') {
				return bad("'%s' cannot be combined with other Match attributes", oattrib)
			}
			if ok2 && cp != "" && arg != "" && arg[0] == '#' {
				rest2 = ""
			}
			cp = rest2
			if result {
				result = !negate
			}
			return result, cp, nil
		}
		attributes++
		if la == "canonical" || la == "final" {
			if la == "final" {
				in.wantFinal = true
			}
			if in.finalPass == negate {
				result = false
			}
			continue
		}
		arg, rest2, ok2 := strdelim(cp, true)
		if !ok2 || cp == "" || arg == "" || arg[0] == '#' {
			return bad("missing Match criteria for %s", attrib)
		}
		cp = rest2
		var r bool
		switch la {
		case "host":
			r = matchHostname(host, arg) == 1
		case "originalhost":
			r = matchHostname(in.originalHost, arg) == 1
		case "user":
			r = matchPatternList(ruser, arg, false) == 1
		case "localuser":
			r = matchPatternList(in.env.localUser, arg, false) == 1
		case "exec":
			keyAlias := host
			if o.hostKeyAlias != nil {
				keyAlias = *o.hostKeyAlias
			}
			ps := strconv.Itoa(port)
			short, _, _ := strings.Cut(in.env.thisHost, ".")
			cmd, err := percentDollarExpand(arg, tokens{
				'C': connectionHash(in.env.thisHost, host, ps, ruser),
				'L': short, 'd': in.env.home, 'h': host, 'k': keyAlias,
				'l': in.env.thisHost, 'n': in.originalHost, 'p': ps, 'r': ruser,
				'u': in.env.localUser, 'i': strconv.Itoa(in.env.uid),
			}, false, nil)
			if err != nil {
				return false, "", lineErr(f, ln, "match exec %q: %v", arg, err)
			}
			if !result {
				continue
			}
			run := in.execInShell
			if in.execFn != nil {
				run = in.execFn
			}
			status, err := run(cmd)
			if err != nil {
				return false, "", lineErr(f, ln, "match exec '%s' error: %v", cmd, err)
			}
			r = status == 0
		default:
			return bad("unsupported Match attribute %s", attrib)
		}
		if r == negate {
			result = false
		}
	}
	if attributes == 0 {
		return bad("one or more attributes required for Match")
	}
	return result, cp, nil
}

// execInShell is readconf.c's execute_in_shell: $SHELL -c cmd with stdin
// and stdout on /dev/null; the exit status, or an error when the command
// did not exit normally.
func (in *interp) execInShell(cmd string) (int, error) {
	shell, ok := in.env.getenv("SHELL")
	if !ok || shell == "" {
		shell = "/bin/sh"
	}
	c := exec.CommandContext(in.ctx, shell, "-c", cmd)
	c.Stderr = os.Stderr
	err := c.Run()
	if err == nil {
		return 0, nil
	}
	var ee *exec.ExitError
	if errors.As(err, &ee) && ee.Exited() {
		return ee.ExitCode(), nil
	}
	return -1, err
}

// canonicalize is ssh.c's resolve_canonicalize without CNAME following:
// numeric addresses get their canonical text, and with
// CanonicalizeHostname a short name is tried with each CanonicalDomains
// suffix.
func (in *interp) canonicalize(host string, af int) (string, error) {
	o := in.o
	if n, ok := numericHost(host, af); ok {
		if !strings.EqualFold(n, host) {
			return n, nil
		}
		return host, nil
	}
	if isAddrFast(host) || o.canonicalizeHostname == canonNo {
		return host, nil
	}
	direct := (o.proxyCommand == nil || strings.EqualFold(*o.proxyCommand, "none")) && o.jumpHost == nil
	if !direct && o.canonicalizeHostname != canonAlways {
		return host, nil
	}
	lookup := in.env.lookupHost
	if lookup == nil {
		lookup = func(context.Context, string) bool { return false }
	}
	if strings.HasSuffix(host, ".") {
		if lookup(in.ctx, host) {
			return strings.TrimSuffix(host, "."), nil
		}
	} else {
		if strings.Count(host, ".") > o.canonicalizeMaxDots {
			return host, nil
		}
		for _, d := range o.canonicalDomains {
			if strings.EqualFold(d, "none") {
				break
			}
			full := host + "." + d + "."
			if lookup(in.ctx, full) {
				return strings.TrimSuffix(full, "."), nil
			}
		}
	}
	if o.canonicalizeFallbackLocal == 0 {
		return "", fmt.Errorf("could not resolve host %q", host)
	}
	return host, nil
}

// finish applies fill_default_options and the rest of ssh.c main() up to
// dump_client_config.
func (in *interp) finish(host string) (Resolved, error) {
	o, env := in.o, in.env
	if o.strictHostKeyChecking == "" {
		o.strictHostKeyChecking = "ask"
	}
	if o.port == -1 {
		o.port = 0
	}
	if len(o.identityFiles) == 0 {
		for _, name := range []string{"id_rsa", "id_ecdsa", "id_ecdsa_sk", "id_ed25519", "id_ed25519_sk", "id_xmss", "id_dsa"} {
			o.addIdentityFile("~/.ssh/"+name, false)
		}
	}
	if len(o.globalKnownHosts) == 0 {
		o.globalKnownHosts = []string{"/etc/ssh/ssh_known_hosts", "/etc/ssh/ssh_known_hosts2"}
	}
	if len(o.userKnownHosts) == 0 {
		o.userKnownHosts = []string{"~/.ssh/known_hosts", "~/.ssh/known_hosts2"}
	}
	if o.identitiesOnly == -1 {
		o.identitiesOnly = 0
	}
	if o.serverAliveInterval == -1 {
		// Debian: in batch mode the default is five minutes.
		if o.batchMode == 1 {
			o.serverAliveInterval = 300
		} else {
			o.serverAliveInterval = 0
		}
	}
	if o.serverAliveCountMax == -1 {
		o.serverAliveCountMax = 3
	}
	if o.hashKnownHosts == -1 {
		o.hashKnownHosts = 0
	}
	if o.proxyCommand != nil && strings.EqualFold(*o.proxyCommand, "none") {
		o.proxyCommand = nil
	}
	if o.jumpHost != nil && *o.jumpHost == "none" && o.jumpPort == 0 && o.jumpUser == nil {
		o.jumpHost = nil
	}
	user := env.localUser
	if o.user != nil {
		user = *o.user
	}
	port := o.port
	if port <= 0 {
		port = 22
	}
	if o.jumpHost != nil {
		jumpPort := o.jumpPort
		if jumpPort <= 0 {
			jumpPort = 22
		}
		jumpUser := user
		if o.jumpUser != nil {
			jumpUser = *o.jumpUser
		}
		if *o.jumpHost == host && port == jumpPort && user == jumpUser {
			return Resolved{}, fmt.Errorf("jumphost loop via %s", *o.jumpHost)
		}
		if o.proxyCommand != nil {
			return Resolved{}, errors.New("inconsistent options: ProxyCommand+ProxyJump")
		}
	}
	r := Resolved{
		Alias:                 in.originalHost,
		HostName:              host,
		Port:                  strconv.Itoa(port),
		User:                  user,
		IdentitiesOnly:        yesNo(o.identitiesOnly),
		StrictHostKeyChecking: o.strictHostKeyChecking,
		ServerAliveInterval:   strconv.Itoa(o.serverAliveInterval),
		ServerAliveCountMax:   strconv.Itoa(o.serverAliveCountMax),
		HashKnownHosts:        yesNo(o.hashKnownHosts),
		ConnectTimeout:        "none",
		GlobalKnownHostsFile:  append([]string(nil), o.globalKnownHosts...),
	}
	if o.connectTimeout != -1 {
		r.ConnectTimeout = strconv.Itoa(o.connectTimeout)
	}
	if o.hostKeyAlias != nil {
		r.HostKeyAlias = asciiLower(*o.hostKeyAlias)
	}
	for _, id := range o.identityFiles {
		r.IdentityFile = append(r.IdentityFile, id.path)
	}
	if o.proxyCommand != nil && o.jumpHost == nil {
		r.ProxyCommand = *o.proxyCommand
	}
	if o.jumpHost != nil {
		r.ProxyJump = formatJump(o)
	}
	ci := in.connInfo(r, host, user)
	toks := ci.tokens()
	if o.identityAgent != nil {
		p, err := tildeExpand(*o.identityAgent, env.home, env.lookupHome)
		if err != nil {
			return Resolved{}, err
		}
		p, err = percentDollarExpand(p, toks, true, env.getenv)
		if err != nil {
			return Resolved{}, fmt.Errorf("invalid environment variable expansion: %w", err)
		}
		r.IdentityAgent = p
	}
	if strings.EqualFold(r.GlobalKnownHostsFile[0], "none") {
		r.GlobalKnownHostsFile = []string{"none"}
	}
	if strings.EqualFold(o.userKnownHosts[0], "none") {
		r.UserKnownHostsFile = []string{"none"}
	} else {
		for _, u := range o.userKnownHosts {
			p, err := tildeExpand(u, env.home, env.lookupHome)
			if err != nil {
				return Resolved{}, err
			}
			p, err = percentDollarExpand(p, toks, true, env.getenv)
			if err != nil {
				return Resolved{}, fmt.Errorf("invalid environment variable expansion: %w", err)
			}
			r.UserKnownHostsFile = append(r.UserKnownHostsFile, p)
		}
	}
	return r, nil
}

// connInfo builds the %-token values for a resolved host.
func (in *interp) connInfo(r Resolved, host, user string) connInfo {
	return newConnInfo(in.env, r, host, user)
}

func newConnInfo(env *goEnv, r Resolved, host, user string) connInfo {
	short, _, _ := strings.Cut(env.thisHost, ".")
	keyAlias := r.Alias
	if r.HostKeyAlias != "" {
		keyAlias = r.HostKeyAlias
	}
	return connInfo{
		thisHost: env.thisHost, shortHost: short, uid: strconv.Itoa(env.uid),
		keyAlias: keyAlias, hostArg: r.Alias, port: r.Port, home: env.home,
		remHost: host, remUser: user, locUser: env.localUser,
	}
}

func yesNo(v int) string {
	if v == 1 {
		return "yes"
	}
	return "no"
}

// formatJump prints ProxyJump like dump_client_config.
func formatJump(o *goOptions) string {
	var b strings.Builder
	if o.jumpExtra != nil {
		b.WriteString(*o.jumpExtra)
		b.WriteByte(',')
	}
	if o.jumpUser != nil {
		b.WriteString(*o.jumpUser)
		b.WriteByte('@')
	}
	h := *o.jumpHost
	numeric := strings.Contains(h, ":") || strings.Trim(h, "1234567890.") == ""
	if numeric {
		b.WriteByte('[')
	}
	b.WriteString(h)
	if numeric {
		b.WriteByte(']')
	}
	if o.jumpPort > 0 {
		b.WriteByte(':')
		b.WriteString(strconv.Itoa(o.jumpPort))
	}
	return b.String()
}

// parseJump is readconf.c's parse_jump as shipped in Debian's OpenSSH 9.2
// (which carries the later upstream version): "none" alone disables
// jumping; otherwise a '#' starts a comment, the value is cut at its
// first inner whitespace (misc.c's rtrim truncates there), every hop must
// parse, the last hop becomes jump_host/user/port and the earlier ones
// jump_extra. strict (ssh -J) also validates host and user names.
func parseJump(s string, o *goOptions, strict, active bool) error {
	if strings.EqualFold(s, "none") {
		if active && o.jumpHost == nil {
			none := "none"
			o.jumpHost = &none
			o.jumpPort = 0
		}
		return nil
	}
	orig := s
	if i := strings.IndexByte(orig, '#'); i >= 0 {
		orig = orig[:i]
	}
	for i := 1; i < len(orig); i++ {
		if isCSpace(orig[i]) {
			orig = orig[:i]
			break
		}
	}
	active = active && o.proxyCommand == nil && o.jumpHost == nil
	var user, host *string
	port := -1
	first := true
	sdup := orig
	for {
		var cp string
		last := false
		if i := strings.LastIndexByte(sdup, ','); i < 0 {
			cp, last = sdup, true
		} else {
			cp, sdup = sdup[i+1:], sdup[:i]
		}
		u, h, p, r := parseSSHURI(cp)
		if r == -1 {
			return errors.New("invalid ProxyJump")
		}
		if r == 1 {
			var err error
			if u, h, p, err = parseUserHostPort(cp); err != nil {
				return err
			}
		}
		if strict {
			if !validHostname(h) {
				return fmt.Errorf("invalid hostname %q", h)
			}
			if u != nil && !validRemoteUser(*u) {
				return fmt.Errorf("invalid username %q", *u)
			}
		}
		if first {
			user, host, port = u, &h, p
		}
		first = false
		if last {
			break
		}
	}
	if !active {
		return nil
	}
	o.jumpUser, o.jumpHost, o.jumpPort = user, host, port
	none := "none"
	o.proxyCommand = &none
	if i := strings.LastIndexByte(orig, ','); i >= 0 {
		extra := orig[:i]
		o.jumpExtra = &extra
	}
	return nil
}

// parseUserHostPort is misc.c's parse_user_host_port.
func parseUserHostPort(s string) (user *string, host string, port int, err error) {
	port = -1
	bad := errors.New("invalid [user@]host[:port]")
	tmp := s
	if i := strings.LastIndexByte(tmp, '@'); i >= 0 {
		if i == 0 {
			return nil, "", -1, bad
		}
		u := tmp[:i]
		user = &u
		tmp = tmp[i+1:]
	}
	h, rest, hasRest, delim, ok := hpdelim2(tmp)
	if !ok || delim == '/' || h == "" {
		return nil, "", -1, bad
	}
	host = cleanHostname(h)
	if hasRest && rest != "" {
		if port = a2port(rest); port <= 0 {
			return nil, "", -1, bad
		}
	}
	return user, host, port, nil
}

// hpdelim2 is misc.c's hpdelim2: split "host[:|/]rest" with [] around
// addresses. hasRest is false when there was no delimiter.
func hpdelim2(s string) (field, rest string, hasRest bool, delim byte, ok bool) {
	i := 0
	if strings.HasPrefix(s, "[") {
		j := strings.IndexByte(s, ']')
		if j < 0 {
			return "", "", false, 0, false
		}
		i = j + 1
	} else if j := strings.IndexAny(s, ":/"); j >= 0 {
		i = j
	} else {
		i = len(s)
	}
	if i == len(s) {
		return s, "", false, 0, true
	}
	switch s[i] {
	case ':', '/':
		return s[:i], s[i+1:], true, s[i], true
	}
	return "", "", false, 0, false
}

func cleanHostname(h string) string {
	if len(h) >= 2 && h[0] == '[' && h[len(h)-1] == ']' {
		return h[1 : len(h)-1]
	}
	return h
}

// parseSSHURI is parse_ssh_uri: r is 1 for "not an ssh:// URI", -1 for an
// invalid one, 0 on success.
func parseSSHURI(uri string) (user *string, host string, port int, r int) {
	const scheme = "ssh://"
	if !strings.HasPrefix(uri, scheme) {
		return nil, "", -1, 1
	}
	tmp := uri[len(scheme):]
	port = -1
	if i := strings.IndexByte(tmp, '@'); i >= 0 {
		ui := tmp[:i]
		if j := strings.IndexByte(ui, ';'); j >= 0 {
			ui = ui[:j]
		}
		if ui == "" {
			return nil, "", -1, -1
		}
		u, ok := urlDecode(ui)
		if !ok {
			return nil, "", -1, -1
		}
		user = &u
		tmp = tmp[i+1:]
	}
	h, rest, hasRest, delim, ok := hpdelim2(tmp)
	if !ok || h == "" {
		return nil, "", -1, -1
	}
	host = cleanHostname(h)
	if _, err := validDomain(host); err != nil {
		return nil, "", -1, -1
	}
	if hasRest && rest != "" {
		if delim == ':' {
			p := rest
			path := ""
			if j := strings.IndexByte(rest, '/'); j >= 0 {
				p, path = rest[:j], rest[j+1:]
			}
			if port = a2port(p); port <= 0 {
				return nil, "", -1, -1
			}
			rest = path
		}
		if rest != "" {
			return nil, "", -1, -1 // a path is not allowed
		}
	}
	return user, host, port, 0
}

func urlDecode(s string) (string, bool) {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		switch c := s[i]; c {
		case '+':
			b.WriteByte(' ')
		case '%':
			if i+2 >= len(s) {
				return "", false
			}
			v, err := strconv.ParseUint(s[i+1:i+3], 16, 8)
			if err != nil {
				return "", false
			}
			b.WriteByte(byte(v))
			i += 2
		default:
			b.WriteByte(c)
		}
	}
	return b.String(), true
}

// matchPattern is match.c's match_pattern: '*' and '?' wildcards,
// case-sensitive, no escapes.
func matchPattern(s, pattern string) bool {
	for {
		if pattern == "" {
			return s == ""
		}
		if pattern[0] == '*' {
			for pattern != "" && pattern[0] == '*' {
				pattern = pattern[1:]
			}
			if pattern == "" {
				return true
			}
			if pattern[0] != '?' && pattern[0] != '*' {
				for ; s != ""; s = s[1:] {
					if s[0] == pattern[0] && matchPattern(s[1:], pattern[1:]) {
						return true
					}
				}
				return false
			}
			for ; s != ""; s = s[1:] {
				if matchPattern(s, pattern) {
					return true
				}
			}
			return false
		}
		if s == "" {
			return false
		}
		if pattern[0] != '?' && pattern[0] != s[0] {
			return false
		}
		s, pattern = s[1:], pattern[1:]
	}
}

// matchPatternList is match_pattern_list: comma-separated patterns, each
// possibly negated; -1 for a negated match, 1 for a positive one, else 0.
func matchPatternList(s, list string, dolower bool) int {
	got := 0
	for i := 0; i < len(list); {
		negated := list[i] == '!'
		if negated {
			i++
		}
		j := i
		for j < len(list) && list[j] != ',' {
			j++
		}
		sub := list[i:j]
		if len(sub) >= 1023 {
			return 0
		}
		i = j
		if i < len(list) {
			i++ // skip the comma
		}
		if dolower {
			sub = asciiLower(sub)
		}
		if matchPattern(s, sub) {
			if negated {
				return -1
			}
			got = 1
		}
	}
	return got
}

// matchHostname is match_hostname: the host is lower-cased first.
func matchHostname(host, list string) int {
	return matchPatternList(asciiLower(host), list, true)
}

// defaultLookupHost resolves name for CanonicalizeHostname.
func defaultLookupHost(ctx context.Context, name string) bool {
	addrs, err := net.DefaultResolver.LookupHost(ctx, name)
	return err == nil && len(addrs) > 0
}
