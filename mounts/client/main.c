/* main.c — corral-fs: command line, mounting, and the one poll loop.
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#include "corral-fs.h"
#include "corral-unix.h"

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <math.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

/* FUSE requests taken per wake-up before the channel is looked at again. */
#define FUSE_BATCH 64

bool fs_verbose;

static void __attribute__ ((format (printf, 1, 0))) vlog (const char *fmt, va_list ap)
{
        char line[1024];

        vsnprintf (line, sizeof line, fmt, ap);
        fprintf (stderr, "corral-fs: %s\n", line);
}

void
fs_log (const char *fmt, ...)
{
        va_list ap;

        va_start (ap, fmt);
        vlog (fmt, ap);
        va_end (ap);
}

void
fs_debug (const char *fmt, ...)
{
        va_list ap;

        if (!fs_verbose)
                return;
        va_start (ap, fmt);
        vlog (fmt, ap);
        va_end (ap);
}

static void
usage (FILE *f)
{
        fputs ("Usage: corral-fs (--fd N | --unix PATH | --serial DEV) [--uid U --gid G]\n"
               "                 [--attr-timeout SECS] [--verbose] MOUNTPOINT\n"
               "\n"
               "  --fd N              talk to corral-fsd on the inherited stream fd N\n"
               "  --unix PATH         connect to corral-fsd's unix socket at PATH\n"
               "  --serial DEV        use a virtio-serial port, e.g. "
               "/dev/virtio-ports/org.corral.fs.0\n"
               "                      (file contents use the VM's ivshmem device when present)\n"
               "  --shm-file PATH     move file contents through this shared-memory file\n"
               "  --uid U, --gid G    owner shown for every file (default: the mount point's)\n"
               "  --attr-timeout SECS how long the kernel caches names and attributes "
               "(default 1)\n"
               "  --no-lookahead      never list a directory ahead of the kernel's lookups\n"
               "  --verbose           log every request to stderr\n",
               f);
}

static int
parse_args (Fs *fs, int argc, char **argv)
{
        static const struct option opts[] = {
                { "fd", required_argument, NULL, 'f' },
                { "unix", required_argument, NULL, 'u' },
                { "serial", required_argument, NULL, 'S' },
                { "shm-file", required_argument, NULL, 'M' },
                { "uid", required_argument, NULL, 'U' },
                { "gid", required_argument, NULL, 'G' },
                { "attr-timeout", required_argument, NULL, 't' },
                { "verbose", no_argument, NULL, 'V' },
                { "no-lookahead", no_argument, NULL, 'L' },
                { "help", no_argument, NULL, 'h' },
                { "version", no_argument, NULL, 'X' },
                { NULL, 0, NULL, 0 },
        };
        int n_transports = 0, c;
        uint32_t v;
        char *end;

        while ((c = getopt_long (argc, argv, "", opts, NULL)) != -1) {
                switch (c) {
                case 'f':
                        if (!proto_parse_u32 (optarg, 0, INT32_MAX, &v))
                                return -EINVAL;
                        fs->opt_fd = (int) v;
                        fs->transport = FS_TRANSPORT_FD;
                        n_transports++;
                        break;
                case 'M':
                        fs->shm_path = optarg;
                        break;
                case 'u':
                case 'S':
                        fs->transport = c == 'u' ? FS_TRANSPORT_UNIX : FS_TRANSPORT_SERIAL;
                        fs->address = optarg;
                        n_transports++;
                        break;
                case 'U':
                case 'G':
                        /* (uid_t) -1 means "unchanged" to chown: never an owner. */
                        if (!proto_parse_u32 (optarg, 0, UINT32_MAX - 1, &v))
                                return -EINVAL;
                        if (c == 'U') {
                                fs->uid = v;
                                fs->have_uid = true;
                        } else {
                                fs->gid = v;
                                fs->have_gid = true;
                        }
                        break;
                case 't':
                        errno = 0;
                        fs->timeout = strtod (optarg, &end);
                        if (errno || end == optarg || *end || !isfinite (fs->timeout) ||
                            fs->timeout < 0 || fs->timeout > 3600)
                                return -EINVAL;
                        break;
                case 'L':
                        fs->lookahead = false;
                        break;
                case 'V':
                        fs_verbose = true;
                        break;
                case 'h':
                        usage (stdout);
                        exit (0);
                case 'X':
                        puts ("corral-fs " CORRAL_VERSION);
                        exit (0);
                default:
                        return -EINVAL;
                }
        }
        if (optind != argc - 1 || n_transports != 1)
                return -EINVAL;
        fs->mountpoint = argv[optind];
        return 0;
}

static int
default_owner (Fs *fs)
{
        struct stat st;

        if (fs->have_uid && fs->have_gid)
                return 0;
        if (stat (fs->mountpoint, &st) < 0)
                return -errno;
        if (!fs->have_uid)
                fs->uid = st.st_uid;
        if (!fs->have_gid)
                fs->gid = st.st_gid;
        return 0;
}

/* Large sequential reads: let the kernel read ahead up to a full request (its default for FUSE
 * is 128 KiB), so a file streams in fewer, larger requests. Best effort: needs root and sysfs. */
static void
tune_readahead (Fs *fs)
{
        char real[PATH_MAX], line[4096], path[128];
        FILE *f;

        if (!realpath (fs->mountpoint, real) || !(f = fopen ("/proc/self/mountinfo", "re")))
                return;
        while (fgets (line, sizeof line, f)) {
                unsigned id, parent, major, minor;
                char root[PATH_MAX], point[PATH_MAX];
                int fd;

                if (sscanf (line, "%u %u %u:%u %4095s %4095s", &id, &parent, &major, &minor, root,
                            point) != 6 ||
                    strcmp (point, real) != 0)
                        continue;
                snprintf (path, sizeof path, "/sys/class/bdi/%u:%u/read_ahead_kb", major, minor);
                fd = open (path, O_WRONLY | O_CLOEXEC);
                if (fd >= 0) {
                        char kb[32];
                        int n = snprintf (kb, sizeof kb, "%u\n", FS_MAX_IO / 1024);
                        if (write (fd, kb, (size_t) n) != n)
                                fs_log ("cannot raise the read-ahead of %s", path);
                        close (fd);
                }
        }
        fclose (f);
}

static int
mount_fuse (Fs *fs)
{
        char opts[256];
        char *argv[] = { (char *) "corral-fs", (char *) "-o", opts, NULL };
        struct fuse_args args = FUSE_ARGS_INIT (3, argv);
        int fd;

        /* The kernel checks permissions against the modes and owner we show. allow_other: the
         * guest's user, not root who mounts, is the one working in the share. */
        snprintf (opts, sizeof opts,
                  "default_permissions,fsname=corral,subtype=corral,max_read=%u%s", FS_MAX_IO,
                  geteuid () == 0 ? ",allow_other" : "");
        fs->se = fuse_session_new (&args, &fs_ops, sizeof fs_ops, fs);
        fuse_opt_free_args (&args);
        if (!fs->se)
                return -EINVAL;
        if (fuse_set_signal_handlers (fs->se) < 0)
                return -EINVAL;
        if (fuse_session_mount (fs->se, fs->mountpoint) < 0)
                return -EIO;
        fs->mounted = true;
        fd = fuse_session_fd (fs->se);
        if (fcntl (fd, F_SETFL, fcntl (fd, F_GETFL) | O_NONBLOCK) < 0 ||
            fcntl (fd, F_SETFD, FD_CLOEXEC) < 0)
                return -errno;
        return 0;
}

static void
read_fuse (Fs *fs)
{
        for (int i = 0; i < FUSE_BATCH && fs_session_can_accept (fs) && !fs->quit; i++) {
                int r = fuse_session_receive_buf (fs->se, &fs->fbuf);

                if (r == -EINTR)
                        continue;
                if (r == -EAGAIN)
                        return;
                if (r <= 0) {
                        /* 0: unmounted (ENODEV); the session has exited. */
                        if (r < 0)
                                fs_log ("reading from the kernel: %s", strerror (-r));
                        fs->quit = true;
                        return;
                }
                fuse_session_process_buf (fs->se, &fs->fbuf);
                /* The first request is INIT; the kernel sets the read-ahead from our reply, so
                 * it is raised only now. */
                if (!fs->readahead_tuned) {
                        fs->readahead_tuned = true;
                        tune_readahead (fs);
                }
                if (fuse_session_exited (fs->se))
                        fs->quit = true;
        }
}

static int
run (Fs *fs)
{
        while (!fs->quit && !fuse_session_exited (fs->se)) {
                struct pollfd pfd[2] = {
                        { .fd = -1, .events = POLLIN },
                        { .fd = -1, .events = POLLIN },
                };
                int64_t now = fs_now_ms (), wake = -1;
                /* First: expired listings queue their FORGETs before the poll is set up. */
                int64_t la_wake = fs_la_expire (fs, now);
                /* Before the poll is set up: a request for a HELLO must be written by it. */
                int64_t ask_wake = fs_session_ask_hello (fs, now);
                int timeout = -1, n;
                bool holding;

                if (fs->hup_backoff && now >= fs->hup_until_ms)
                        fs->hup_backoff = false;
                if (fs->connected && !fs->hup_backoff) {
                        pfd[0].fd = fs->chan_fd;
                        if (!corral_outq_empty (&fs->out))
                                pfd[0].events |= POLLOUT;
                } else if (fs->hup_backoff) {
                        wake = fs->hup_until_ms;
                }
                /* Nothing is read from the kernel before the first session, nor for a while
                 * between sessions (its requests wait there: a re-attach loses none), nor while
                 * the queue to the host is full. */
                holding = !fs->in_session &&
                          (!fs->had_session || now < fs->session_lost_ms + FS_REATTACH_HOLD_MS);
                if (!holding && fs_session_can_accept (fs))
                        pfd[1].fd = fuse_session_fd (fs->se);
                else if (holding && fs->had_session &&
                         (wake < 0 || fs->session_lost_ms + FS_REATTACH_HOLD_MS < wake))
                        wake = fs->session_lost_ms + FS_REATTACH_HOLD_MS;
                if (la_wake >= 0 && (wake < 0 || la_wake < wake))
                        wake = la_wake;
                if (ask_wake >= 0 && (wake < 0 || ask_wake < wake))
                        wake = ask_wake;
                if (wake >= 0)
                        timeout = wake > now ? (int) (wake - now) : 0;

                n = poll (pfd, 2, timeout);
                if (n < 0) {
                        if (errno == EINTR)
                                continue;
                        return -errno;
                }
                if (n == 0)
                        continue; /* a backoff or a hold ended: looked at again above */
                if (pfd[0].revents & (POLLIN | POLLHUP | POLLERR))
                        fs_transport_read (fs);
                if (pfd[1].revents)
                        read_fuse (fs);
                fs_transport_flush (fs);
        }
        return 0;
}

/* Every access of a program to the shares waits for this process; under load (git's parallel
 * lstat, make -j) it must not queue behind the very programs it serves: under TCG the default
 * priority made git status 1.6x slower. Best effort: only root may raise a priority. Called
 * before any thread starts (Linux keeps the nice value per thread; new threads inherit it). */
#define FS_NICE -10

static void
raise_priority (void)
{
        if (setpriority (PRIO_PROCESS, 0, FS_NICE) < 0)
                fs_debug ("priority stays (%s)", strerror (errno));
}

int
main (int argc, char **argv)
{
        Fs fs = { .opt_fd = -1, .chan_fd = -1, .timeout = 1.0, .lookahead = true };
        int r;

        if (parse_args (&fs, argc, argv) < 0) {
                usage (stderr);
                return 2;
        }
        if (corral_ensure_std_fds () < 0)
                return 1;
        raise_priority ();
        r = default_owner (&fs);
        if (r < 0) {
                fs_log ("%s: %s", fs.mountpoint, strerror (-r));
                return 1;
        }
        r = fs_session_init (&fs);
        fs_shm_open (&fs);
        if (r == 0)
                r = fs_transport_open (&fs);
        if (r < 0) {
                fs_log ("cannot connect: %s", strerror (-r));
                fs.exit_code = 1;
                goto out;
        }
        fs.started_ms = fs_now_ms ();
        r = mount_fuse (&fs);
        if (r == 0)
                r = fs_notify_start (&fs);
        if (r < 0) {
                fs_log ("cannot mount %s: %s", fs.mountpoint, strerror (-r));
                fs.exit_code = 1;
                goto out;
        }
        fs_debug ("mounted %s, owner %u:%u", fs.mountpoint, (unsigned) fs.uid, (unsigned) fs.gid);
        r = run (&fs);
        if (r < 0) {
                fs_log ("event loop: %s", strerror (-r));
                fs.exit_code = 1;
        }

out:
        /* Pending requests first: a notification may wait for a lock one of them holds. */
        fs_session_end (&fs, "exiting");
        fs_notify_stop (&fs);
        if (fs.se) {
                if (fs.mounted)
                        fuse_session_unmount (fs.se);
                fuse_remove_signal_handlers (fs.se);
                fuse_session_destroy (fs.se);
        }
        free (fs.fbuf.mem);
        free (fs.shm_bounce);
        fs_transport_close (&fs);
        fs_session_clear (&fs);
        return fs.exit_code;
}
