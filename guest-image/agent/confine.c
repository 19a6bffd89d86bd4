/* confine.c — the second wall around each command (SECURITY.md A7, A8): a seccomp filter that
 * refuses system calls aimed at the kernel's attack surface, and a Landlock ruleset that lets the
 * command write only its own places. The VM stays the boundary; this keeps a hostile command away
 * from the guest's services and their channels to the host, which share its kernel.
 *
 * Both are built here in the agent and installed once in a spawner thread (spawner.c), whose
 * clones inherit them; when no spawner can run, the spawned child (spawn.c, a vfork-style clone
 * that must not allocate) installs them itself: no_new_privs, landlock_restrict_self, seccomp.
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#include "proc.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/landlock.h>
#include <linux/seccomp.h>
#include <sched.h>
#include <seccomp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/personality.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#ifndef LANDLOCK_ACCESS_FS_TRUNCATE
#define LANDLOCK_ACCESS_FS_TRUNCATE (1ULL << 14)
#endif
#ifndef LANDLOCK_CREATE_RULESET_VERSION
#define LANDLOCK_CREATE_RULESET_VERSION (1U << 0)
#endif

/* What a refused call is compared on: nothing, or one argument under a mask. */
typedef enum { WHEN_ALWAYS, WHEN_ARG_HAS_BITS, WHEN_ARG_EQ } When;

typedef struct {
        const char *name; /* as libseccomp names it */
        int err; /* what the call returns: EPERM, or ENOSYS where a program should fall back */
        When when;
        unsigned arg;
        uint64_t value;
        const char *why; /* documents the entry; SECURITY.md A7 lists the same table */
} DenyRule;

/* personality() flags that bring back old, unsafe address-space behaviour. ADDR_NO_RANDOMIZE
 * (setarch -R, debuggers) and the PER_LINUX32/UNAME26 domains stay allowed. */
#define OLD_ABI_FLAGS                                                                              \
        (READ_IMPLIES_EXEC | MMAP_PAGE_ZERO | ADDR_COMPAT_LAYOUT | ADDR_LIMIT_32BIT |              \
         ADDR_LIMIT_3GB | FDPIC_FUNCPTRS | SHORT_INODE | WHOLE_SECONDS | STICKY_TIMEOUTS)

/* The one table of refused system calls. Everything else is allowed: the command runs as an
 * unprivileged user, in a VM without a network card, under Landlock. */
static const DenyRule deny_rules[] = {
        { "bpf", EPERM, WHEN_ALWAYS, 0, 0, "eBPF programs and maps" },
        { "userfaultfd", EPERM, WHEN_ALWAYS, 0, 0, "page-fault handling from user space" },
        { "perf_event_open", EPERM, WHEN_ALWAYS, 0, 0, "performance counters" },
        { "kexec_load", EPERM, WHEN_ALWAYS, 0, 0, "loading a new kernel" },
        { "kexec_file_load", EPERM, WHEN_ALWAYS, 0, 0, "loading a new kernel" },
        { "init_module", EPERM, WHEN_ALWAYS, 0, 0, "kernel modules" },
        { "finit_module", EPERM, WHEN_ALWAYS, 0, 0, "kernel modules" },
        { "delete_module", EPERM, WHEN_ALWAYS, 0, 0, "kernel modules" },
        { "keyctl", EPERM, WHEN_ALWAYS, 0, 0, "the kernel keyring" },
        { "add_key", EPERM, WHEN_ALWAYS, 0, 0, "the kernel keyring" },
        { "request_key", EPERM, WHEN_ALWAYS, 0, 0, "the kernel keyring" },
        { "mount", EPERM, WHEN_ALWAYS, 0, 0, "mounting file systems" },
        { "umount2", EPERM, WHEN_ALWAYS, 0, 0, "mounting file systems" },
        { "pivot_root", EPERM, WHEN_ALWAYS, 0, 0, "mounting file systems" },
        { "fsopen", EPERM, WHEN_ALWAYS, 0, 0, "mounting file systems" },
        { "fsconfig", EPERM, WHEN_ALWAYS, 0, 0, "mounting file systems" },
        { "fsmount", EPERM, WHEN_ALWAYS, 0, 0, "mounting file systems" },
        { "fspick", EPERM, WHEN_ALWAYS, 0, 0, "mounting file systems" },
        { "move_mount", EPERM, WHEN_ALWAYS, 0, 0, "mounting file systems" },
        { "open_tree", EPERM, WHEN_ALWAYS, 0, 0, "mounting file systems" },
        { "mount_setattr", EPERM, WHEN_ALWAYS, 0, 0, "mounting file systems" },
        { "swapon", EPERM, WHEN_ALWAYS, 0, 0, "swap" },
        { "swapoff", EPERM, WHEN_ALWAYS, 0, 0, "swap" },
        { "setns", EPERM, WHEN_ALWAYS, 0, 0, "entering namespaces" },
        { "unshare", EPERM, WHEN_ARG_HAS_BITS, 0, CLONE_NEWUSER, "new user namespaces" },
        { "clone", EPERM, WHEN_ARG_HAS_BITS, 0, CLONE_NEWUSER, "new user namespaces" },
        /* Its flags are behind a pointer the filter cannot read; glibc falls back to clone. */
        { "clone3", ENOSYS, WHEN_ALWAYS, 0, 0, "clone3 (clone is used instead)" },
        { "io_uring_setup", EPERM, WHEN_ALWAYS, 0, 0, "io_uring" },
        { "io_uring_enter", EPERM, WHEN_ALWAYS, 0, 0, "io_uring" },
        { "io_uring_register", EPERM, WHEN_ALWAYS, 0, 0, "io_uring" },
        { "personality", EPERM, WHEN_ARG_HAS_BITS, 0, OLD_ABI_FLAGS, "old address-space ABIs" },
        { "socket", EPERM, WHEN_ARG_EQ, 0, AF_VSOCK, "vsock sockets (the host's channels)" },
        { "acct", EPERM, WHEN_ALWAYS, 0, 0, "process accounting" },
        { "quotactl", EPERM, WHEN_ALWAYS, 0, 0, "disk quotas" },
        { "lookup_dcookie", EPERM, WHEN_ALWAYS, 0, 0, "profiling cookies" },
        { "uselib", EPERM, WHEN_ALWAYS, 0, 0, "a.out libraries" },
        { "open_by_handle_at", EPERM, WHEN_ALWAYS, 0, 0, "file handles" },
        { "syslog", EPERM, WHEN_ALWAYS, 0, 0, "the kernel log" },
        { "vhangup", EPERM, WHEN_ALWAYS, 0, 0, "terminal hangup" },
        { "iopl", EPERM, WHEN_ALWAYS, 0, 0, "I/O ports" },
        { "ioperm", EPERM, WHEN_ALWAYS, 0, 0, "I/O ports" },
};

/* personality(0xffffffff) only asks; any other value with bit 31 set would be stored as it is,
 * so one with an old-ABI flag could hide behind that bit. libseccomp 2.5 allows one comparison
 * per argument in a rule: "bit 31 set and bit k clear", one rule per k, refuses every value
 * with bit 31 but the query. */
static int
add_personality_high_bit_rules (scmp_filter_ctx ctx, int nr, uint32_t action)
{
        for (int k = 0; k < 31; k++) {
                uint64_t mask = 0x80000000ULL | (1ULL << k);
                int r = seccomp_rule_add (ctx, action, nr, 1,
                                          SCMP_CMP (0, SCMP_CMP_MASKED_EQ, mask, 0x80000000ULL));

                if (r < 0)
                        return r;
        }
        return 0;
}

/* notify: refused calls go to the agent's listener (which answers with r->err) instead of
 * failing in the kernel; clone3's ENOSYS stays in the kernel, glibc tries it for every thread. */
static int
add_rule (scmp_filter_ctx ctx, const DenyRule *r, bool notify)
{
        int nr = seccomp_syscall_resolve_name (r->name);
        uint32_t action =
                notify && r->err == EPERM ? SCMP_ACT_NOTIFY : SCMP_ACT_ERRNO ((uint32_t) r->err);
        bool personality = strcmp (r->name, "personality") == 0;

        if (nr == __NR_SCMP_ERROR)
                return 0; /* not on this architecture */
        switch (r->when) {
        case WHEN_ALWAYS:
                return seccomp_rule_add (ctx, action, nr, 0);
        case WHEN_ARG_EQ:
                return seccomp_rule_add (ctx, action, nr, 1,
                                         SCMP_CMP (r->arg, SCMP_CMP_EQ, r->value));
        case WHEN_ARG_HAS_BITS:
                /* One rule per bit: libseccomp has no "masked not equal". For personality,
                 * "and bit 31 clear": the rules below take the values with bit 31. */
                for (int b = 0; b < 64; b++) {
                        uint64_t bit = 1ULL << b;
                        uint64_t mask = bit | (personality ? 0x80000000ULL : 0);
                        int rc;

                        if (!(r->value & bit))
                                continue;
                        rc = seccomp_rule_add (ctx, action, nr, 1,
                                               SCMP_CMP (r->arg, SCMP_CMP_MASKED_EQ, mask, bit));
                        if (rc < 0)
                                return rc;
                }
                return personality ? add_personality_high_bit_rules (ctx, nr, action) : 0;
        }
        return -EINVAL;
}

/* The filter as a BPF program (libseccomp writes it to an fd; a memfd reads it back). */
static int
build_filter (struct sock_fprog *ret, bool notify)
{
        scmp_filter_ctx ctx = seccomp_init (SCMP_ACT_ALLOW);
        struct stat st;
        int fd = -1, r = -ENOMEM;
        void *buf = NULL;

        if (!ctx)
                return -ENOMEM;
        /* 32-bit (int 0x80) and x32 entry: refused, not killed. */
        r = seccomp_attr_set (ctx, SCMP_FLTATR_ACT_BADARCH, SCMP_ACT_ERRNO (EPERM));
        /* A binary tree on the syscall number: fewer instructions per call, and for the kernel's
         * per-syscall cache, computed on every install (each command), to walk. */
        if (r == 0)
                r = seccomp_attr_set (ctx, SCMP_FLTATR_CTL_OPTIMIZE, 2);
        for (size_t i = 0; r == 0 && i < sizeof deny_rules / sizeof deny_rules[0]; i++)
                if ((r = add_rule (ctx, &deny_rules[i], notify)) < 0)
                        agent_log ("seccomp: cannot add the rule for %s: %s", deny_rules[i].name,
                                   strerror (-r));
        if (r < 0)
                goto out;
        fd = memfd_create ("corral-seccomp", MFD_CLOEXEC);
        if (fd < 0) {
                r = -errno;
                goto out;
        }
        r = seccomp_export_bpf (ctx, fd);
        if (r < 0)
                goto out;
        if (fstat (fd, &st) < 0 || st.st_size <= 0 ||
            (size_t) st.st_size % sizeof (struct sock_filter) != 0 ||
            (size_t) st.st_size / sizeof (struct sock_filter) > BPF_MAXINSNS) {
                r = -EIO;
                goto out;
        }
        buf = malloc ((size_t) st.st_size);
        if (!buf) {
                r = -ENOMEM;
                goto out;
        }
        if (pread (fd, buf, (size_t) st.st_size, 0) != st.st_size) {
                r = -EIO;
                goto out;
        }
        ret->filter = buf;
        ret->len = (unsigned short) ((size_t) st.st_size / sizeof (struct sock_filter));
        buf = NULL;
        r = 0;
out:
        free (buf);
        if (fd >= 0)
                close (fd);
        seccomp_release (ctx);
        return r;
}

static int
landlock_abi (void)
{
        long v = syscall (SYS_landlock_create_ruleset, NULL, 0, LANDLOCK_CREATE_RULESET_VERSION);

        return v < 0 ? -errno : (int) v;
}

static uint64_t
handled_access (int abi)
{
        uint64_t all = LANDLOCK_ACCESS_FS_EXECUTE | LANDLOCK_ACCESS_FS_WRITE_FILE |
                       LANDLOCK_ACCESS_FS_READ_FILE | LANDLOCK_ACCESS_FS_READ_DIR |
                       LANDLOCK_ACCESS_FS_REMOVE_DIR | LANDLOCK_ACCESS_FS_REMOVE_FILE |
                       LANDLOCK_ACCESS_FS_MAKE_CHAR | LANDLOCK_ACCESS_FS_MAKE_DIR |
                       LANDLOCK_ACCESS_FS_MAKE_REG | LANDLOCK_ACCESS_FS_MAKE_SOCK |
                       LANDLOCK_ACCESS_FS_MAKE_FIFO | LANDLOCK_ACCESS_FS_MAKE_BLOCK |
                       LANDLOCK_ACCESS_FS_MAKE_SYM;

        if (abi >= 2)
                all |= LANDLOCK_ACCESS_FS_REFER;
        if (abi >= 3)
                all |= LANDLOCK_ACCESS_FS_TRUNCATE;
        return all;
}

/* The notifying variant, its socket pair and buffers; on any failure the plain filter is used
 * and refused calls are not reported. */
static void
init_notify (Confine *c)
{
        struct seccomp_notif_sizes sizes;
        int r;

        if (syscall (SYS_seccomp, SECCOMP_GET_NOTIF_SIZES, 0, &sizes) < 0) {
                agent_debug ("no seccomp notifications: %s", strerror (errno));
                return;
        }
        c->notif_req_size = sizes.seccomp_notif > sizeof (struct seccomp_notif)
                                    ? sizes.seccomp_notif
                                    : sizeof (struct seccomp_notif);
        c->notif_resp_size = sizes.seccomp_notif_resp > sizeof (struct seccomp_notif_resp)
                                     ? sizes.seccomp_notif_resp
                                     : sizeof (struct seccomp_notif_resp);
        c->notif_req = calloc (1, c->notif_req_size);
        c->notif_resp = calloc (1, c->notif_resp_size);
        if (!c->notif_req || !c->notif_resp ||
            socketpair (AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, c->notify_sock) < 0) {
                agent_log ("no seccomp notifications: %s", strerror (errno ? errno : ENOMEM));
                return;
        }
        r = build_filter (&c->notify_filter, true);
        if (r < 0)
                agent_debug ("no seccomp notifications: %s", strerror (-r));
}

void
confine_init (Confine *c)
{
        int r;

        memset (c, 0, sizeof *c);
        c->ruleset_fd = -1;
        c->notify_sock[0] = c->notify_sock[1] = -1;
        r = build_filter (&c->filter, false);
        c->seccomp_err = r < 0 ? -r : 0;
        if (r < 0)
                agent_log ("seccomp filter unavailable: %s", strerror (-r));
        else
                init_notify (c);
        r = landlock_abi ();
        c->landlock_abi = r > 0 ? r : 0;
        c->landlock_err = r > 0 ? 0 : -r;
}

void
confine_clear (Confine *c)
{
        spawner_free (c->spawner);
        c->spawner = NULL;
        free (c->filter.filter);
        c->filter.filter = NULL;
        free (c->notify_filter.filter);
        c->notify_filter.filter = NULL;
        for (int i = 0; i < 2; i++) {
                if (c->notify_sock[i] >= 0)
                        close (c->notify_sock[i]);
                c->notify_sock[i] = -1;
        }
        free (c->notif_req);
        free (c->notif_resp);
        c->notif_req = c->notif_resp = NULL;
        if (c->ruleset_fd >= 0)
                close (c->ruleset_fd);
        c->ruleset_fd = -1;
        free (c->ruleset_home);
        c->ruleset_home = NULL;
        while (c->listeners) {
                ConfineListener *l = c->listeners;

                c->listeners = l->next;
                if (l->src.fd >= 0)
                        close (l->src.fd);
                free (l);
        }
}

/* Rights for reading and running files; "write" places get every handled right. */
#define READ_RIGHTS                                                                                \
        (LANDLOCK_ACCESS_FS_EXECUTE | LANDLOCK_ACCESS_FS_READ_FILE | LANDLOCK_ACCESS_FS_READ_DIR)

/* The agent never waits on a file system here: /workspace is a FUSE mount whose server is on the
 * host, and a VM in the warm pool has none connected yet. An O_PATH open and a statx with
 * AT_STATX_DONT_SYNC (cached attributes) send FUSE nothing; fstat or access would ask, and
 * block the agent until a host answers. */
static bool
path_type (int dirfd, const char *path, int flags, mode_t *ret_mode)
{
        struct statx stx;

        if (statx (dirfd, path, flags | AT_SYMLINK_NOFOLLOW | AT_STATX_DONT_SYNC, STATX_TYPE,
                   &stx) < 0)
                return false;
        *ret_mode = stx.stx_mode;
        return true;
}

static int
allow_path (int ruleset, const char *path, uint64_t rights, uint64_t handled)
{
        struct landlock_path_beneath_attr attr = { .allowed_access = rights & handled };
        int fd = open (path, O_PATH | O_CLOEXEC);
        int r = 0;
        mode_t mode;

        if (fd < 0)
                return errno == ENOENT || errno == ENOTDIR || errno == EACCES ? 0 : -errno;
        /* A file (a device, /vmlinuz) takes only the rights that apply to files. */
        if (path_type (fd, "", AT_EMPTY_PATH, &mode) && !S_ISDIR (mode))
                attr.allowed_access &= LANDLOCK_ACCESS_FS_EXECUTE | LANDLOCK_ACCESS_FS_WRITE_FILE |
                                       LANDLOCK_ACCESS_FS_READ_FILE | LANDLOCK_ACCESS_FS_TRUNCATE;
        attr.parent_fd = fd;
        if (syscall (SYS_landlock_add_rule, ruleset, LANDLOCK_RULE_PATH_BENEATH, &attr, 0) < 0)
                r = -errno;
        close (fd);
        return r;
}

#define SESSION_CA "/run/corral/session-ca.pem"

/* Devices a program may use; the virtio ports, /dev/fuse, /dev/vsock and the rest are absent. */
static const char *const rw_devices[] = { "/dev/null",   "/dev/zero",    "/dev/full",
                                          "/dev/random", "/dev/urandom", "/dev/tty",
                                          "/dev/ptmx",   "/dev/pts",     "/dev/shm" };

static int
build_ruleset (int abi, const char *home)
{
        uint64_t handled = handled_access (abi);
        struct landlock_ruleset_attr attr = { .handled_access_fs = handled };
        const char *const rw_dirs[] = { "/workspace", "/tmp", "/var/tmp", home };
        int ruleset = (int) syscall (SYS_landlock_create_ruleset, &attr, sizeof attr, 0);
        DIR *root;
        struct dirent *de;
        int r = 0;

        if (ruleset < 0)
                return -errno;
        /* Read (and run) everything at the top level but the devices and /run, where the guest's
         * services keep their sockets and session material; list any directory. */
        r = allow_path (ruleset, "/", LANDLOCK_ACCESS_FS_READ_DIR, handled);
        root = r == 0 ? opendir ("/") : NULL;
        if (r == 0 && !root)
                r = -errno;
        while (r == 0 && root && (de = readdir (root))) {
                char path[NAME_MAX + 2];

                if (de->d_name[0] == '.' || strcmp (de->d_name, "dev") == 0 ||
                    strcmp (de->d_name, "run") == 0)
                        continue;
                snprintf (path, sizeof path, "/%s", de->d_name);
                r = allow_path (ruleset, path, READ_RIGHTS, handled);
        }
        if (root)
                closedir (root);
        /* /proc/self/... is written by some programs (oom_score_adj, comm); the rest of /proc
         * is the kernel's own business and needs privileges anyway. */
        if (r == 0)
                r = allow_path (ruleset, "/proc", READ_RIGHTS | LANDLOCK_ACCESS_FS_WRITE_FILE,
                                handled);
        /* The session CA (public; NODE_EXTRA_CA_CERTS names it), not the rest of /run/corral. */
        if (r == 0)
                r = allow_path (ruleset, SESSION_CA, LANDLOCK_ACCESS_FS_READ_FILE, handled);
        for (size_t i = 0; r == 0 && i < sizeof rw_devices / sizeof rw_devices[0]; i++)
                r = allow_path (ruleset, rw_devices[i], handled, handled);
        for (size_t i = 0; r == 0 && i < sizeof rw_dirs / sizeof rw_dirs[0]; i++)
                if (rw_dirs[i] && rw_dirs[i][0] == '/' && strcmp (rw_dirs[i], "/") != 0)
                        r = allow_path (ruleset, rw_dirs[i], handled, handled);
        if (r < 0) {
                close (ruleset);
                return r;
        }
        return ruleset;
}

/* What the places a rule names are now, as one number. A rule needs its path to exist when it
 * is made, and holds the object it found: /workspace is the root of the shares' FUSE mount,
 * which appears after boot and is a new object each time corral-fs mounts it again (Landlock
 * skips the directory under a mount point, so a rule made before the mount would not cover the
 * shares); the session CA appears when the network's session starts. */
static uint64_t
places_fingerprint (void)
{
        static const char *const places[] = { "/workspace", "/var/tmp", SESSION_CA };
        uint64_t h = 1469598103934665603ULL;

        for (unsigned i = 0; i < sizeof places / sizeof places[0]; i++) {
                struct statx stx = { 0 };
                uint64_t v[3] = { 0, 0, 0 };

                if (statx (AT_FDCWD, places[i], AT_STATX_DONT_SYNC, STATX_INO, &stx) == 0) {
                        v[0] = ((uint64_t) stx.stx_dev_major << 32) | stx.stx_dev_minor;
                        v[1] = stx.stx_ino;
                        v[2] = 1;
                }
                for (unsigned k = 0; k < 3; k++)
                        h = (h ^ v[k]) * 1099511628211ULL;
        }
        return h;
}

int
confine_ruleset (Confine *c, const char *home, int *ret_fd)
{
        uint64_t places;
        int fd;

        *ret_fd = -1;
        if (c->landlock_abi <= 0)
                return 0;
        /* Built again when the home or one of those places changes. */
        places = places_fingerprint ();
        if (c->ruleset_fd >= 0 && c->ruleset_home && home && strcmp (c->ruleset_home, home) == 0 &&
            c->ruleset_places == places) {
                *ret_fd = c->ruleset_fd;
                return 0;
        }
        fd = build_ruleset (c->landlock_abi, home);
        if (fd < 0) {
                agent_log ("cannot build the Landlock ruleset: %s", strerror (-fd));
                return fd;
        }
        if (c->ruleset_fd >= 0)
                close (c->ruleset_fd);
        free (c->ruleset_home);
        c->ruleset_gen++;
        c->ruleset_fd = fd;
        c->ruleset_home = home ? strdup (home) : NULL;
        c->ruleset_places = places;
        *ret_fd = fd;
        return 0;
}

/* The child's listener fd to the agent (SCM_RIGHTS; nothing allocated). */
static int
send_fd (int sock, int fd)
{
        char byte = 0;
        struct iovec iov = { .iov_base = &byte, .iov_len = 1 };
        union {
                struct cmsghdr h;
                char buf[CMSG_SPACE (sizeof (int))];
        } u;
        struct msghdr msg = { .msg_iov = &iov,
                              .msg_iovlen = 1,
                              .msg_control = u.buf,
                              .msg_controllen = sizeof u.buf };
        struct cmsghdr *cm;

        memset (&u, 0, sizeof u);
        cm = CMSG_FIRSTHDR (&msg);
        cm->cmsg_level = SOL_SOCKET;
        cm->cmsg_type = SCM_RIGHTS;
        cm->cmsg_len = CMSG_LEN (sizeof (int));
        memcpy (CMSG_DATA (cm), &fd, sizeof fd);
        return sendmsg (sock, &msg, MSG_NOSIGNAL) == 1 ? 0 : -1;
}

int
confine_apply_self (const Confine *c, int ruleset_fd, int *ret_listener)
{
        long listener;

        *ret_listener = -1;
        if (prctl (PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0)
                return -1;
        if (ruleset_fd >= 0 && syscall (SYS_landlock_restrict_self, ruleset_fd, 0) < 0)
                return -1;
        if (c->notify_filter.filter && c->notify_sock[1] >= 0) {
                /* EBUSY (a listener up the chain already, e.g. a nested agent): the plain one.
                 * The kernel makes the listener close-on-exec. */
                listener = syscall (SYS_seccomp, SECCOMP_SET_MODE_FILTER,
                                    SECCOMP_FILTER_FLAG_NEW_LISTENER, &c->notify_filter);
                if (listener >= 0) {
                        *ret_listener = (int) listener;
                        return 0;
                }
        }
        if (c->filter.filter && syscall (SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, &c->filter) < 0)
                return -1;
        return 0;
}

int
confine_apply_child (const Confine *c, int ruleset_fd, bool *ret_sent)
{
        int listener, r;

        *ret_sent = false;
        if (confine_apply_self (c, ruleset_fd, &listener) < 0)
                return -1;
        if (listener < 0)
                return 0;
        /* Without its listener the filter would answer ENOSYS: fail instead. */
        r = send_fd (c->notify_sock[1], listener);
        close (listener);
        if (r < 0)
                return -1;
        *ret_sent = true;
        return 0;
}

static void
note_refused (Proc *p, const char *name)
{
        for (unsigned i = 0; i < p->n_refused; i++)
                if (strcmp (p->refused[i], name) == 0)
                        return;
        if (p->n_refused < PROC_MAX_REFUSED)
                snprintf (p->refused[p->n_refused++], sizeof p->refused[0], "%s", name);
}

static Proc *
proc_of_pid (Agent *a, pid_t pid)
{
        for (Proc *p = a->procs; p; p = p->next)
                if (p->pid == pid && !p->reaped)
                        return p;
        return NULL;
}

/* The parent of pid, from /proc/PID/stat ("pid (comm) state ppid ..."; comm may hold spaces
 * and parentheses, so the last ')' ends it). 0 when it cannot be read. */
static pid_t
parent_of (pid_t pid)
{
        char path[64], buf[512];
        const char *end;
        ssize_t n;
        int fd, ppid = 0;

        snprintf (path, sizeof path, "/proc/%d/stat", (int) pid);
        fd = open (path, O_RDONLY | O_CLOEXEC);
        if (fd < 0)
                return 0;
        n = read (fd, buf, sizeof buf - 1);
        close (fd);
        if (n <= 0)
                return 0;
        buf[n] = '\0';
        end = strrchr (buf, ')');
        if (!end || sscanf (end + 1, " %*c %d", &ppid) != 1)
                return 0;
        return (pid_t) ppid;
}

/* The command whose tree pid belongs to: each command leads its own session, so its session id
 * names it; a process that left the session is followed up its parents. */
static Proc *
command_of (Agent *a, pid_t pid)
{
        pid_t sid = getsid (pid);
        Proc *p = sid > 0 ? proc_of_pid (a, sid) : NULL;

        for (int depth = 0; !p && pid > 1 && depth < 64; depth++) {
                p = proc_of_pid (a, pid);
                pid = parent_of (pid);
        }
        return p;
}

/* A refused call: answer it with the table's errno, remember its name for the command whose
 * tree made it (p: the listener is that command's own; NULL: a spawner's, shared by all). */
static void
on_notify (Agent *a, Source *s, uint32_t events)
{
        Proc *p = s->data;
        Confine *c = &a->confine;
        struct seccomp_notif *req = c->notif_req;
        struct seccomp_notif_resp *resp = c->notif_resp;

        if (events & EPOLLIN) {
                memset (req, 0, c->notif_req_size);
                if (ioctl (s->fd, SECCOMP_IOCTL_NOTIF_RECV, req) == 0) {
                        char *name =
                                seccomp_syscall_resolve_num_arch (req->data.arch, req->data.nr);
                        Proc *cmd = p ? p : command_of (a, (pid_t) req->pid);

                        memset (resp, 0, c->notif_resp_size);
                        resp->id = req->id;
                        resp->error = -EPERM;
                        /* ENOENT: the caller is gone (killed meanwhile) */
                        if (ioctl (s->fd, SECCOMP_IOCTL_NOTIF_SEND, resp) < 0 && errno != ENOENT)
                                agent_debug ("seccomp answer: %s", strerror (errno));
                        if (cmd)
                                note_refused (cmd, name ? name : "unknown");
                        agent_debug ("proc %llu (pid %d): refused %s",
                                     (unsigned long long) (cmd ? cmd->id : 0), (int) req->pid,
                                     name ? name : "?");
                        free (name);
                        return;
                }
                if (errno == ENOENT || errno == EINTR)
                        return;
                agent_debug ("seccomp notification: %s", strerror (errno));
        }
        /* No process uses the filter any more, or the listener broke. */
        if (p) {
                source_close (a, s);
                return;
        }
        for (ConfineListener **l = &c->listeners; *l; l = &(*l)->next) {
                if (&(*l)->src == s) {
                        ConfineListener *dead = *l;

                        *l = dead->next;
                        source_close (a, s);
                        free (dead);
                        return;
                }
        }
}

void
confine_watch_listener (Agent *a, int fd)
{
        ConfineListener *l = calloc (1, sizeof *l);

        if (!l) {
                agent_log ("cannot watch a seccomp listener: %s", strerror (ENOMEM));
                close (fd);
                return;
        }
        source_init (&l->src, on_notify, NULL);
        if (source_add (a, &l->src, fd, EPOLLIN) < 0) {
                agent_log ("cannot watch a seccomp listener: %s", strerror (errno));
                close (fd);
                free (l);
                return;
        }
        l->next = a->confine.listeners;
        a->confine.listeners = l;
}

void
confine_take_listener (Agent *a, Proc *p)
{
        char byte;
        struct iovec iov = { .iov_base = &byte, .iov_len = 1 };
        union {
                struct cmsghdr h;
                char buf[CMSG_SPACE (sizeof (int))];
        } u;
        struct msghdr msg = { .msg_iov = &iov,
                              .msg_iovlen = 1,
                              .msg_control = u.buf,
                              .msg_controllen = sizeof u.buf };
        struct cmsghdr *cm;
        int fd = -1;

        if (recvmsg (a->confine.notify_sock[0], &msg, MSG_DONTWAIT | MSG_CMSG_CLOEXEC) != 1)
                return;
        cm = CMSG_FIRSTHDR (&msg);
        if (cm && cm->cmsg_level == SOL_SOCKET && cm->cmsg_type == SCM_RIGHTS &&
            cm->cmsg_len == CMSG_LEN (sizeof (int)))
                memcpy (&fd, CMSG_DATA (cm), sizeof fd);
        if (fd < 0)
                return;
        if (!p) {
                close (fd);
                return;
        }
        p->notify.func = on_notify;
        if (source_add (a, &p->notify, fd, EPOLLIN) < 0) {
                agent_log ("cannot watch a seccomp listener: %s", strerror (errno));
                close (fd);
        }
}

void
confine_add_refused (cJSON *obj, const Proc *p)
{
        cJSON *arr;

        if (p->n_refused == 0 || !(arr = cJSON_AddArrayToObject (obj, "refused")))
                return;
        for (unsigned i = 0; i < p->n_refused; i++)
                cJSON_AddItemToArray (arr, cJSON_CreateString (p->refused[i]));
}

void
confine_describe (const Confine *c, cJSON *res)
{
        cJSON *o = cJSON_AddObjectToObject (res, "confinement");
        char text[160];

        if (!o)
                return;
        if (c->seccomp_err == 0)
                snprintf (text, sizeof text, "on (%zu calls refused)",
                          sizeof deny_rules / sizeof deny_rules[0]);
        else
                snprintf (text, sizeof text, "unavailable: %s", strerror (c->seccomp_err));
        cJSON_AddStringToObject (o, "seccomp", text);
        if (c->seccomp_err == 0) {
                cJSON *refused = cJSON_AddObjectToObject (o, "refused");

                for (size_t i = 0; refused && i < sizeof deny_rules / sizeof deny_rules[0]; i++)
                        cJSON_AddStringToObject (refused, deny_rules[i].name,
                                                 strerrorname_np (deny_rules[i].err));
        }
        if (c->landlock_abi > 0)
                snprintf (text, sizeof text, "on (ABI %d)", c->landlock_abi);
        else if (c->landlock_err == ENOSYS || c->landlock_err == EOPNOTSUPP)
                snprintf (text, sizeof text,
                          "unavailable: this kernel has no Landlock; commands run without it");
        else
                snprintf (text, sizeof text, "unavailable: %s; commands run without it",
                          strerror (c->landlock_err));
        cJSON_AddStringToObject (o, "landlock", text);
}
