/* corral-egress-vm.c — see corral-egress-vm.h.
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#include "corral-egress-vm.h"

#include <errno.h>
#include <fcntl.h>
#include <glib/gi18n.h>
#include <sys/file.h>
#include <unistd.h>

#include "corral-glib-compat.h"
#include "corral-paths.h"
#include "corral-spawn.h"

const char *
corral_egress_vm_daemon_path (void)
{
        return corral_paths_helper (CORRAL_HELPER_EGRESSD);
}

static char *
vm_file (const char *vm_dir, const char *name)
{
        return g_build_filename (vm_dir, name, NULL);
}

gboolean
corral_egress_vm_is_running (const char *vm_dir)
{
        g_autofree char *lock = vm_file (vm_dir, "egressd.lock");
        g_autofd int fd = open (lock, O_RDWR | O_CLOEXEC);

        /* Taken: somebody serves. Free: we held it for a moment (closing releases it). */
        return fd >= 0 && flock (fd, LOCK_EX | LOCK_NB) < 0 && errno == EWOULDBLOCK;
}

static gboolean
spawn_daemon (const char *vm_dir, GError **error)
{
        g_autofree char *port = vm_file (vm_dir, "net.sock");
        g_autofree char *policy = vm_file (vm_dir, "egress-policy.json");
        g_autofree char *audit = vm_file (vm_dir, "egress.jsonl");
        g_autofree char *lock = vm_file (vm_dir, "egressd.lock");
        g_autofree char *log = vm_file (vm_dir, "egressd.log");
        g_autofree char *alert = vm_file (vm_dir, "network-off.txt");
        const char *ca = g_getenv ("CORRAL_EGRESS_CA_FILE");
        const char *argv[] = { corral_egress_vm_daemon_path (),
                               "--connect",
                               port,
                               "--lock",
                               lock,
                               "--policy",
                               policy,
                               "--audit",
                               audit,
                               "--all-secrets",
                               "--alert-out",
                               alert,
                               ca && *ca ? "--upstream-ca" : NULL,
                               ca,
                               NULL };

        return corral_spawn_detached (vm_dir, argv, log, _ ("Cannot start the network proxy: %s"),
                                      error);
}

gboolean
corral_egress_vm_ensure (const char *vm_dir, GError **error)
{
        g_autofree char *port = vm_file (vm_dir, "net.sock");

        g_return_val_if_fail (vm_dir != NULL, FALSE);

        if (corral_egress_vm_is_running (vm_dir))
                return TRUE;
        if (!g_file_test (port, G_FILE_TEST_EXISTS))
                return TRUE; /* a VM from before networks, or not running */
        if (!spawn_daemon (vm_dir, error))
                return FALSE;
        /* The daemon (or one that won the lock) takes it within a moment; the keychain may be
         * slow to answer, so allow a few seconds. */
        for (int i = 0; i < 400; i++) {
                if (corral_egress_vm_is_running (vm_dir))
                        return TRUE;
                g_usleep (25 * 1000);
        }
        g_set_error (error, G_IO_ERROR, G_IO_ERROR_TIMED_OUT,
                     _ ("The network proxy did not start: see %s/egressd.log"), vm_dir);
        return FALSE;
}

char *
corral_egress_vm_dup_alert (const char *vm_dir)
{
        g_autofree char *path = vm_file (vm_dir, "network-off.txt");
        g_autofree char *text = NULL;
        gsize len = 0;

        /* Written by the running daemon; an older one's is gone once a new session starts. */
        if (!corral_egress_vm_is_running (vm_dir) ||
            !g_file_get_contents (path, &text, &len, NULL) || len > 4096 ||
            !g_utf8_validate (text, (gssize) len, NULL))
                return NULL;
        return g_strstrip (g_steal_pointer (&text));
}
