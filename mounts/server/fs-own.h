/* fs-own.h — Corral's own folders, which no share may expose.
 *
 * A guest that could write Corral's state (a VM's network policy, which the egress daemon
 * follows at once), its settings (MCP servers: commands the host starts) or the keychain's
 * folder would reach past every other rule. A share that is one of these folders, or lies
 * inside one, is refused; a share that contains one (a home-folder share) hides it, found by
 * identity (device and inode) wherever it is, on top of the hidden paths by name (fs-paths.h).
 * SECURITY.md F20.
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#pragma once

#include <glib.h>
#include <stdbool.h>
#include <sys/stat.h>

typedef struct {
        dev_t dev;
        ino_t ino;
} FsDirId;

/* $XDG_STATE_HOME/corral, $XDG_CONFIG_HOME/corral, $XDG_DATA_HOME/corral,
 * $XDG_CACHE_HOME/corral and $XDG_DATA_HOME/keyrings (GLib's defaults where unset), plus extra
 * (nullable: the VM's folder, the keep folder). (transfer full) */
char **fs_own_dirs (const char *const *extra);

/* The identities (FsDirId) of those of paths that are folders now, following links. */
GArray *fs_own_ids (const char *const *paths);
/* Whether st is one of ids (a folder). */
bool fs_own_ids_contain (GArray *ids, const struct stat *st);
/* Whether the folder fd is one of ids or lies inside one (its ancestors, up to /). */
bool fs_own_ids_enclose (GArray *ids, int fd);

/* The check fs_server_add_share() makes, for callers that record a share while no server runs:
 * FALSE with a G_IO_ERROR_PERMISSION_DENIED error naming path when it is one of own_dirs or
 * inside one. A path that cannot be opened passes (the server reports that itself). */
gboolean fs_own_check_share (const char *path, const char *const *own_dirs, GError **error);
