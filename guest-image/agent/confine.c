/* confine.c — the second wall around each command (SECURITY.md A7, A8): a seccomp filter that
 * refuses system calls aimed at the kernel's attack surface, and a Landlock ruleset that lets the
 * command write only its own places. The VM stays the boundary; this keeps a hostile command away
 * from the guest's services and their channels to the host, which share its kernel.
 *
 * Both are built here in the agent; the spawned child (spawn.c, a vfork-style clone that must
 * not allocate) only installs them: no_new_privs, landlock_restrict_self, seccomp, then execve.
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
        const char *why; /* SECURITY.md A7 lists the same table */
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

const char *
confine_deny_reason (const char *syscall_name)
{
        for (size_t i = 0; i < sizeof deny_rules / sizeof deny_rules[0]; i++)
                if (strcmp (deny_rules[i].name, syscall_name) == 0)
                        return deny_rules[i].why;
        return NULL;
}

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

static int
add_rule (scmp_filter_ctx ctx, const DenyRule *r)
{
        int nr = seccomp_syscall_resolve_name (r->name);
        uint32_t action = SCMP_ACT_ERRNO ((uint32_t) r->err);
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
build_filter (struct sock_fprog *ret)
{
        scmp_filter_ctx ctx = seccomp_init (SCMP_ACT_ALLOW);
        struct stat st;
        int fd = -1, r = -ENOMEM;
        void *buf = NULL;

        if (!ctx)
                return -ENOMEM;
        /* 32-bit (int 0x80) and x32 entry: refused, not killed. */
        r = seccomp_attr_set (ctx, SCMP_FLTATR_ACT_BADARCH, SCMP_ACT_ERRNO (EPERM));
        for (size_t i = 0; r == 0 && i < sizeof deny_rules / sizeof deny_rules[0]; i++)
                if ((r = add_rule (ctx, &deny_rules[i])) < 0)
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

void
confine_init (Confine *c)
{
        int r;

        memset (c, 0, sizeof *c);
        c->ruleset_fd = -1;
        r = build_filter (&c->filter);
        c->seccomp_err = r < 0 ? -r : 0;
        if (r < 0)
                agent_log ("seccomp filter unavailable: %s", strerror (-r));
        r = landlock_abi ();
        c->landlock_abi = r > 0 ? r : 0;
        c->landlock_err = r > 0 ? 0 : -r;
}

void
confine_clear (Confine *c)
{
        free (c->filter.filter);
        c->filter.filter = NULL;
        if (c->ruleset_fd >= 0)
                close (c->ruleset_fd);
        c->ruleset_fd = -1;
        free (c->ruleset_home);
        c->ruleset_home = NULL;
}

/* Rights for reading and running files; "write" places get every handled right. */
#define READ_RIGHTS                                                                                \
        (LANDLOCK_ACCESS_FS_EXECUTE | LANDLOCK_ACCESS_FS_READ_FILE | LANDLOCK_ACCESS_FS_READ_DIR)

static int
allow_path (int ruleset, const char *path, uint64_t rights, uint64_t handled)
{
        struct landlock_path_beneath_attr attr = { .allowed_access = rights & handled };
        int fd = open (path, O_PATH | O_CLOEXEC);
        int r = 0;

        struct stat st;

        if (fd < 0)
                return errno == ENOENT || errno == ENOTDIR || errno == EACCES ? 0 : -errno;
        /* A file (a device, /vmlinuz) takes only the rights that apply to files. */
        if (fstat (fd, &st) == 0 && !S_ISDIR (st.st_mode))
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

int
confine_ruleset (Confine *c, const char *home, int *ret_fd)
{
        bool ca;
        int fd;

        *ret_fd = -1;
        if (c->landlock_abi <= 0)
                return 0;
        /* Built again when the home changes or the session CA appears (the network's session
         * can start after the first command). */
        ca = access (SESSION_CA, F_OK) == 0;
        if (c->ruleset_fd >= 0 && c->ruleset_home && home && strcmp (c->ruleset_home, home) == 0 &&
            c->ruleset_ca == ca) {
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
        c->ruleset_fd = fd;
        c->ruleset_home = home ? strdup (home) : NULL;
        c->ruleset_ca = ca;
        *ret_fd = fd;
        return 0;
}

int
confine_apply_child (const struct sock_fprog *filter, int ruleset_fd)
{
        if (prctl (PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0)
                return -1;
        if (ruleset_fd >= 0 && syscall (SYS_landlock_restrict_self, ruleset_fd, 0) < 0)
                return -1;
        if (filter && filter->filter &&
            syscall (SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, filter) < 0)
                return -1;
        return 0;
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
