package imsg

// Protocol constants of tmux 3.2a to 3.5a (tmux-protocol.h, tmux.h,
// compat/imsg.h): the same in every release of nativeProtocols.
const (
	nativeProtocolVersion = 8
	imsgHeaderSize        = 16
	maxImsgSize           = 16384
	imsgHasFD             = 1

	msgVersion           = 12
	msgIdentifyFlags     = 100
	msgIdentifyTerm      = 101
	msgIdentifyTTYName   = 102
	msgIdentifyStdin     = 104
	msgIdentifyEnviron   = 105
	msgIdentifyDone      = 106
	msgIdentifyClientPID = 107
	msgIdentifyCwd       = 108
	msgIdentifyFeatures  = 109
	msgIdentifyStdout    = 110
	msgIdentifyLongFlags = 111
	msgCommand           = 200
	msgDetach            = 201
	msgDetachKill        = 202
	msgExit              = 203
	msgExited            = 204
	msgExiting           = 205
	msgReady             = 207
	msgShell             = 209
	msgShutdown          = 210
	msgOldStderr         = 211
	msgOldStdin          = 212
	msgOldStdout         = 213
	msgExec              = 217
	msgFlags             = 218
	msgReadOpen          = 300
	msgRead              = 301
	msgReadDone          = 302
	msgWriteOpen         = 303
	msgWrite             = 304
	msgWriteReady        = 305
	msgWriteClose        = 306
	msgReadCancel        = 307 // 3.4 and later

	clientControl        = 0x2000
	clientControlControl = 0x4000
	clientUTF8           = 0x10000
	clientDefaultSocket  = 0x8000000

	// nativeMaxData is the most data one message carries.
	nativeMaxData = maxImsgSize - imsgHeaderSize
)

// nativeProtocol is one tmux release's client as the native client
// reproduces it: what differs from release to release, as data. Each
// entry was checked against that release's source (upstream tag, which
// for 3.3a and 3.5a is also what Debian's bookworm and trixie packages
// build: their patches touch none of client.c, file.c, proc.c,
// tmux-protocol.h, tmux.c or compat/imsg*): the identify messages of
// client_send_identify, the messages client_dispatch_wait handles,
// file.c's client side, the imsg framing (header, MAX_IMSGSIZE 16384,
// one descriptor per message), PROTOCOL_VERSION, the CLIENT_* flags it
// sends and main()'s choice of socket. Everything not listed here is the
// same in all of them.
type nativeProtocol struct {
	release  string // what `tmux -V` prints after "tmux "
	protocol uint32 // PROTOCOL_VERSION

	// longFlagsFirst: client_send_identify's first message is
	// MSG_IDENTIFY_LONGFLAGS with the 64-bit flags (3.5 on); before,
	// MSG_IDENTIFY_FLAGS with them as an int. The second is
	// MSG_IDENTIFY_LONGFLAGS in every release.
	longFlagsFirst bool
	// readCancel: client_dispatch_wait handles MSG_READ_CANCEL (3.4 on:
	// file_read_cancel); before, the message is ignored.
	readCancel bool
}

// nativeProtocols are the releases whose client this file reproduces.
// Differences between neighbours (git diff of client.c, file.c, proc.c,
// tmux-protocol.h, tmux.c, cmd.c and compat/ between the tags):
//   - 3.3 → 3.3a: nothing on the client side.
//   - 3.3a → 3.4: MSG_READ_CANCEL (307) and file_read_cancel; the new
//     OpenBSD imsg in compat/ (same wire format); systemd socket
//     activation (a server-starting path, never a command client's).
//   - 3.4 → 3.5a: the first identify message is MSG_IDENTIFY_LONGFLAGS.
//
// 3.2a is not here although its messages are 3.3's: its client parses
// the command line with getopt(3) before connecting (to find
// CMD_STARTSERVER) and so prints getopt's own complaints ("tmux: unknown
// option -- Z") on its stderr before the server's usage line; 3.3's
// argument parser prints nothing. Reproducing that means every command's
// option template of 3.2a and getopt's messages. (Its cmd_table also
// lacks clear-prompt-history, server-access and show-prompt-history.)
// 3.6 and later are not here either until someone checks their client
// against this list. Those releases go to the binary.
var nativeProtocols = []nativeProtocol{
	{release: "3.3", protocol: 8},
	{release: "3.3a", protocol: 8},
	{release: "3.4", protocol: 8, readCancel: true},
	{release: "3.5", protocol: 8, readCancel: true, longFlagsFirst: true},
	{release: "3.5a", protocol: 8, readCancel: true, longFlagsFirst: true},
}

// nativeProtocolOf is the entry for a release, nil when there is none.
func nativeProtocolOf(release string) *nativeProtocol {
	for i := range nativeProtocols {
		if nativeProtocols[i].release == release {
			return &nativeProtocols[i]
		}
	}
	return nil
}
