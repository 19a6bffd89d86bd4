/* main.c — corral-agent: command line, process setup, transport choice.
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#include "corral-unix.h"
#include "proc.h"

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

static void
usage (FILE *f)
{
        fputs ("Usage: corral-agent (--fd N | --stdio | --unix PATH | --vsock PORT | --serial "
               "PATH)\n"
               "                    [--user NAME] [--net-env FILE] [--window BYTES] [--verbose]\n"
               "                    [--allow-poweroff]\n"
               "\n"
               "  --fd N         speak the protocol on the inherited stream fd N\n"
               "  --stdio        speak the protocol on stdin/stdout\n"
               "  --unix PATH    listen on a unix socket (one session at a time)\n"
               "  --vsock PORT   listen on AF_VSOCK port PORT (one session at a time)\n"
               "  --serial PATH  use a virtio-serial port, e.g. "
               "/dev/virtio-ports/org.corral.agent.0\n"
               "  --user NAME    default user for exec when running as root\n"
               "                 (default: corral, or nobody if corral does not exist)\n"
               "  --net-env FILE variables every command gets, written by the network proxy\n"
               "                 (default /run/corral/net.env; never overrides the base ones)\n"
               "  --window BYTES initial credit per channel (default 262144)\n"
               "  --allow-poweroff  system.poweroff signals PID 1 (busybox init) to power off;\n"
               "                 only for the agent a VM's init starts\n"
               "  --verbose      log details to stderr\n",
               f);
}

static int
parse_args (Agent *a, int argc, char **argv)
{
        static const struct option opts[] = {
                { "fd", required_argument, NULL, 'f' },
                { "stdio", no_argument, NULL, 's' },
                { "unix", required_argument, NULL, 'u' },
                { "vsock", required_argument, NULL, 'v' },
                { "serial", required_argument, NULL, 'S' },
                { "user", required_argument, NULL, 'U' },
                { "net-env", required_argument, NULL, 'N' },
                { "window", required_argument, NULL, 'w' },
                { "verbose", no_argument, NULL, 'V' },
                { "allow-poweroff", no_argument, NULL, 'P' },
                { "help", no_argument, NULL, 'h' },
                { "version", no_argument, NULL, 'X' },
                { NULL, 0, NULL, 0 },
        };
        int n_transports = 0, c;
        uint32_t v;

        while ((c = getopt_long (argc, argv, "", opts, NULL)) != -1) {
                switch (c) {
                case 'f':
                        if (!proto_parse_u32 (optarg, 0, INT32_MAX, &v))
                                return -EINVAL;
                        a->opt_fd = (int) v;
                        a->transport = TRANSPORT_FD;
                        n_transports++;
                        break;
                case 's':
                        a->transport = TRANSPORT_STDIO;
                        n_transports++;
                        break;
                case 'u':
                case 'v':
                case 'S':
                        a->transport = c == 'u'   ? TRANSPORT_UNIX
                                       : c == 'v' ? TRANSPORT_VSOCK
                                                  : TRANSPORT_SERIAL;
                        a->address = optarg;
                        n_transports++;
                        break;
                case 'U':
                        if (!optarg[0])
                                return -EINVAL;
                        a->default_user = optarg;
                        break;
                case 'N':
                        a->net_env = optarg;
                        break;
                case 'w':
                        if (!proto_parse_u32 (optarg, 1, INT32_MAX, &a->window))
                                return -EINVAL;
                        break;
                case 'V':
                        agent_verbose = true;
                        break;
                case 'P':
                        a->allow_poweroff = true;
                        break;
                case 'h':
                        usage (stdout);
                        exit (0);
                case 'X':
                        puts ("corral-agent " CORRAL_VERSION);
                        exit (0);
                default:
                        return -EINVAL;
                }
        }
        if (optind != argc || n_transports != 1)
                return -EINVAL;
        return 0;
}

static void
read_boot_id (Agent *a)
{
        char raw[64] = "";
        size_t n = 0;
        FILE *f = fopen ("/proc/sys/kernel/random/boot_id", "re");

        if (f) {
                if (!fgets (raw, sizeof raw, f))
                        raw[0] = '\0';
                fclose (f);
        }
        for (const char *p = raw; *p && n < PROTO_NONCE_HEX_LEN; p++)
                if ((*p >= '0' && *p <= '9') || (*p >= 'a' && *p <= 'f'))
                        a->boot_id[n++] = *p;
        a->boot_id[n] = '\0';
        if (n != PROTO_NONCE_HEX_LEN && proto_random_hex (a->boot_id, PROTO_NONCE_HEX_LEN / 2) < 0)
                strcpy (a->boot_id, "00000000000000000000000000000000");
}

/* Up to 1024 processes with three pipes each need more than the usual soft limit. */
static void
raise_nofile (Agent *a)
{
        struct rlimit rl;

        if (getrlimit (RLIMIT_NOFILE, &rl) < 0)
                return;
        a->orig_nofile_soft = rl.rlim_cur;
        a->orig_nofile_hard = rl.rlim_max;
        rl.rlim_cur = rl.rlim_max;
        if (setrlimit (RLIMIT_NOFILE, &rl) < 0)
                agent_debug ("cannot raise RLIMIT_NOFILE: %s", strerror (errno));
}

int
main (int argc, char **argv)
{
        Agent a = { .epfd = -1, .window = PROTO_DEFAULT_WINDOW, .opt_fd = -1 };
        int r;

        agent_loop_preinit (&a);
        transport_init (&a);

        if (parse_args (&a, argc, argv) < 0) {
                usage (stderr);
                return 2;
        }
        if (corral_ensure_std_fds () < 0)
                return 1;
        /* Creation modes in requests are exact; children get 022 back. */
        umask (0);
        a.is_root = geteuid () == 0;
        raise_nofile (&a);
        confine_init (&a.confine);
        read_boot_id (&a);
        channels_init (&a);

        r = agent_loop_init (&a);
        if (r == 0)
                r = transport_start (&a);
        if (r < 0) {
                agent_log ("cannot start: %s", strerror (-r));
                a.exit_code = 1;
        } else {
                agent_debug ("running, protocol %d, window %u", PROTO_VERSION, a.window);
                r = agent_run (&a);
                if (r < 0)
                        a.exit_code = 1;
        }

        session_end (&a, "agent exits");
        procs_kill_foreground (&a);
        procs_free_all (&a);
        channels_clear (&a);
        transport_stop (&a);
        agent_loop_clear (&a);
        confine_clear (&a.confine);
        return a.exit_code;
}
