/* corral-spawn.h — starting a per-VM daemon (corral-fsd, corral-egressd) detached from the
 * caller: in its own session, nobody's child, stdin/stdout on /dev/null, stderr appended to a
 * log file (0600), so it outlives corralctl or the app and keeps its own lifetime (the VM's).
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#pragma once

#include <errno.h>
#include <fcntl.h>
#include <glib.h>
#include <unistd.h>

#include "corral-glib-compat.h"

static inline void
corral_spawn_child_setup (gpointer data)
{
        setsid (); /* not killed with the terminal of the process that started it */
}

/* failed_format: the translated message when the log cannot be opened, with one %s for the
 * reason, e.g. _("Cannot start the file server: %s"). */
static inline gboolean
corral_spawn_detached (const char *dir,
                       const char *const *argv,
                       const char *log_path,
                       const char *failed_format,
                       GError **error)
{
        g_autofd int log_fd = open (log_path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
        g_autofd int null_fd = open ("/dev/null", O_RDWR | O_CLOEXEC);

        if (log_fd < 0 || null_fd < 0) {
                int errsv = errno;
                /* failed_format is the caller's _() literal with one %s (see above) */
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wformat-nonliteral"
                g_set_error (error, G_FILE_ERROR, g_file_error_from_errno (errsv), failed_format,
                             g_strerror (errsv));
#pragma GCC diagnostic pop
                return FALSE;
        }
        /* Without G_SPAWN_DO_NOT_REAP_CHILD GLib double-forks: the daemon is nobody's child. */
        return g_spawn_async_with_pipes_and_fds (
                dir, argv, NULL, G_SPAWN_DEFAULT, corral_spawn_child_setup, NULL, null_fd, null_fd,
                log_fd, NULL, NULL, 0, NULL, NULL, NULL, NULL, error);
}
