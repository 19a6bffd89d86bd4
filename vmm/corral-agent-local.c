/* corral-agent-local.c — start a corral-agent on this machine over a socketpair.
 *
 * Used by the tests and by `corralctl --local`: no VM, no isolation.
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#include "corral-agent-private.h"

#include "corral-glib-compat.h"

#include <errno.h>
#include <glib/gi18n-lib.h>
#include <sys/socket.h>
#include <unistd.h>

#define AGENT_FD 3

static void
child_setup (gpointer user_data)
{
        /* Keep Ctrl-C in the caller's terminal away from the agent; it exits on EOF. */
        setsid ();
}

gboolean
corral_agent_client_spawn_local_agent (const char *agent_path,
                                       const char *const *extra_args,
                                       GPid *ret_pid,
                                       int *ret_fd,
                                       GError **error)
{
        g_autoptr (GPtrArray) argv = g_ptr_array_new ();
        g_autofd int ours = -1;
        g_autofd int theirs = -1;
        int pair[2];
        int source_fds[1], target_fds[1] = { AGENT_FD };
        GPid pid;

        g_return_val_if_fail (agent_path != NULL, FALSE);
        g_return_val_if_fail (ret_pid != NULL && ret_fd != NULL, FALSE);

        if (!g_file_test (agent_path, G_FILE_TEST_IS_EXECUTABLE) ||
            g_file_test (agent_path, G_FILE_TEST_IS_DIR)) {
                g_set_error (error, G_IO_ERROR, G_IO_ERROR_NOT_FOUND,
                             _ ("The guest agent program “%s” does not exist or is not executable"),
                             agent_path);
                return FALSE;
        }
        if (socketpair (AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, pair) < 0) {
                int errsv = errno;

                g_set_error (error, G_IO_ERROR, g_io_error_from_errno (errsv),
                             _ ("Could not create a socket pair: %s"), g_strerror (errsv));
                return FALSE;
        }
        ours = pair[0];
        theirs = pair[1];
        source_fds[0] = theirs;

        g_ptr_array_add (argv, (gpointer) agent_path);
        g_ptr_array_add (argv, (gpointer) "--fd");
        g_ptr_array_add (argv, (gpointer) G_STRINGIFY (AGENT_FD));
        for (const char *const *a = extra_args; a && *a; a++)
                g_ptr_array_add (argv, (gpointer) *a);
        g_ptr_array_add (argv, NULL);

        /* The fd mapping clears CLOEXEC on the child's fd 3 only; everything else stays closed. */
        if (!g_spawn_async_with_pipes_and_fds (NULL, (const char *const *) argv->pdata, NULL,
                                               G_SPAWN_DO_NOT_REAP_CHILD, child_setup, NULL, -1, -1,
                                               -1, source_fds, target_fds, 1, &pid, NULL, NULL,
                                               NULL, error))
                return FALSE;
        *ret_pid = pid;
        *ret_fd = g_steal_fd (&ours);
        return TRUE;
}
