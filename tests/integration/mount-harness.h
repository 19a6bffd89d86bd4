/* mount-harness.h — a real shared-folder mount for tests, without a VM.
 *
 * mount_harness_new() connects corral-fsd (CORRAL_FSD_PATH) and corral-fs (CORRAL_FS_PATH) with
 * a socketpair, mounts at a fresh temporary directory and returns once the mount answers
 * (statfs reports FUSE). Each share is then the folder mountpoint/NAME. Both children get
 * SIGTERM if the test process dies, so a crashed test leaves no server behind; the kernel
 * mount goes when corral-fs exits.
 *
 * Needs /dev/fuse and either root or fusermount3. When CORRAL_FSD_PATH / CORRAL_FS_PATH are not
 * set, or FUSE is unusable, the error is G_IO_ERROR_NOT_SUPPORTED: tests skip on that code
 * (mount_harness_skip_or_fail) unless CORRAL_REQUIRE_FUSE=1 (tools/test), and fail on any other.
 *
 * Everything the server writes (audit log, kept versions) stays in the harness's temporary
 * directory and goes with it.
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#pragma once

#include <glib.h>

G_BEGIN_DECLS

typedef struct {
        char *mountpoint; /* where corral-fs is mounted; shares are its subfolders */
        char *audit_path; /* corral-fsd's --audit file (may not exist until something is logged) */
        char *kept_dir; /* corral-fsd's --keep-dir: old versions that rw-nodelete renames replaced */
        GPid fsd_pid; /* 0 once reaped */
        GPid fs_pid; /* 0 once reaped */
        /* private */
        char *tmpdir;
} MountHarness;

/* share_specs: "NAME:MODE:PATH" (MODE ro | rw | rw-nodelete), NULL-terminated. */
MountHarness *mount_harness_new (const char *const *share_specs, GError **error);

/* The same with extra arguments: fsd_args go to corral-fsd (e.g. "--control", PATH), fs_args
 * to corral-fs (e.g. "--attr-timeout", "0"); either may be NULL. */
MountHarness *mount_harness_new_full (const char *const *share_specs,
                                      const char *const *fsd_args,
                                      const char *const *fs_args,
                                      GError **error);

/* Called with the test's ends of the two connections, before the mount is waited for: it
 * must pass every byte from one to the other (corral-fs speaks first only after corral-fsd's
 * HELLO) and owns both fds. */
typedef void (*MountHarnessRelay) (int fsd_fd, int fs_fd, gpointer user_data);

/* The same as mount_harness_new_full(), with the test in the middle: corral-fsd and corral-fs
 * each get their own socketpair, and relay joins them (to watch or count what passes). */
MountHarness *mount_harness_new_relayed (const char *const *share_specs,
                                         const char *const *fsd_args,
                                         const char *const *fs_args,
                                         MountHarnessRelay relay,
                                         gpointer user_data,
                                         GError **error);

/* mountpoint/share/rel (rel may be NULL). (transfer full) */
char *mount_harness_path (const MountHarness *h, const char *share, const char *rel);

/* Unmounts (lazily), waits for both children (SIGKILL after 5 s) and removes the temporary
 * directory. NULL is accepted. */
void mount_harness_free (MountHarness *h);
G_DEFINE_AUTOPTR_CLEANUP_FUNC (MountHarness, mount_harness_free)

/* Waits up to timeout_ms for *pid to exit; on exit reaps it, stores the wait status in
 * *ret_status (may be NULL), sets *pid to 0 and returns TRUE. */
gboolean mount_harness_wait_pid (GPid *pid, guint timeout_ms, int *ret_status);

/* For a test's setup: g_test_skip() when error is G_IO_ERROR_NOT_SUPPORTED (returns TRUE: the
 * caller returns), else fails the test with the message. */
gboolean mount_harness_skip_or_fail (GError *error);

/* Runs argv in cwd (NULL: current) and returns TRUE when it exits 0. Its stdout is returned in
 * *ret_stdout (may be NULL); stderr goes to the test log. On failure, error says how it ended
 * and what it printed. */
gboolean
mount_harness_run (const char *cwd, const char *const *argv, char **ret_stdout, GError **error);

G_END_DECLS
