/* fs-own.c — see fs-own.h.
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#include "fs-own.h"

#include <fcntl.h>
#include <gio/gio.h>
#include <glib/gi18n.h>
#include <unistd.h>

#include "corral-glib-compat.h"

char **
fs_own_dirs (const char *const *extra)
{
        const char *bases[] = {
                g_get_user_state_dir (),
                g_get_user_config_dir (),
                g_get_user_data_dir (),
                g_get_user_cache_dir (),
        };
        g_autoptr (GStrvBuilder) b = g_strv_builder_new ();
        g_autofree char *keyrings = g_build_filename (g_get_user_data_dir (), "keyrings", NULL);

        for (guint i = 0; i < G_N_ELEMENTS (bases); i++) {
                g_autofree char *dir = g_build_filename (bases[i], "corral", NULL);
                g_strv_builder_add (b, dir);
        }
        g_strv_builder_add (b, keyrings);
        for (guint i = 0; extra && extra[i]; i++)
                g_strv_builder_add (b, extra[i]);
        return g_strv_builder_end (b);
}

GArray *
fs_own_ids (const char *const *paths)
{
        GArray *ids = g_array_new (FALSE, FALSE, sizeof (FsDirId));

        for (guint i = 0; paths && paths[i]; i++) {
                struct stat st;
                /* Followed: the person's own links to these folders lead to them too. */
                if (stat (paths[i], &st) == 0 && S_ISDIR (st.st_mode)) {
                        FsDirId id = { st.st_dev, st.st_ino };
                        g_array_append_val (ids, id);
                }
        }
        return ids;
}

bool
fs_own_ids_contain (GArray *ids, const struct stat *st)
{
        if (!S_ISDIR (st->st_mode))
                return false;
        for (guint i = 0; i < ids->len; i++) {
                const FsDirId *id = &g_array_index (ids, FsDirId, i);
                if (id->dev == st->st_dev && id->ino == st->st_ino)
                        return true;
        }
        return false;
}

bool
fs_own_ids_enclose (GArray *ids, int fd)
{
        g_autofd int cur = fcntl (fd, F_DUPFD_CLOEXEC, 3);

        for (guint depth = 0; cur >= 0 && depth < 4096; depth++) {
                struct stat st, up_st;
                int up;

                if (fstat (cur, &st) < 0)
                        return false;
                if (fs_own_ids_contain (ids, &st))
                        return true;
                up = openat (cur, "..", O_PATH | O_DIRECTORY | O_CLOEXEC);
                if (up < 0)
                        return false;
                close (cur);
                cur = up;
                if (fstat (cur, &up_st) < 0 ||
                    (up_st.st_dev == st.st_dev && up_st.st_ino == st.st_ino))
                        return false; /* the root */
        }
        return false;
}

gboolean
fs_own_check_share (const char *path, const char *const *own_dirs, GError **error)
{
        g_autoptr (GArray) ids = fs_own_ids (own_dirs);
        g_autofd int fd = open (path, O_PATH | O_DIRECTORY | O_CLOEXEC);

        if (fd < 0 || !fs_own_ids_enclose (ids, fd))
                return TRUE;
        g_set_error (error, G_IO_ERROR, G_IO_ERROR_PERMISSION_DENIED,
                     _ ("“%s” holds Corral's own files (its settings, virtual machines or the "
                        "keychain) and cannot be shared: the assistant could change its own "
                        "permissions there. Choose another folder."),
                     path);
        return FALSE;
}
