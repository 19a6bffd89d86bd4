/* fs-managed.h — the shared-folder settings of the organisation's managed policy.
 *
 * IT departments lock Corral's settings in one JSON file (`/etc/corral/managed.json`, set at
 * build time with -Dmanaged_policy; see README, "Decisions"). Its "sharedFolders" object
 * belongs to the file server; the rest of the file belongs to other parts of Corral and is not
 * looked at here:
 *
 *   { "sharedFolders": { "protectedPaths": [ "deploy/" ], "hiddenPaths": [ "secrets.env" ] } }
 *
 * protectedPaths: patterns read-only in every share, in every mode, on top of the defaults
 * (SECURITY.md F8). hiddenPaths: patterns the guest cannot see at all (F20). The file is untrusted input like any other: bounded, validated, and a
 * damaged one is an error, never a silently weaker policy.
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#pragma once

#include <glib.h>

#define FS_MANAGED_ERROR (fs_managed_error_quark ())
GQuark fs_managed_error_quark (void);

typedef enum {
        FS_MANAGED_ERROR_INVALID, /* malformed, too large, not a regular file */
        FS_MANAGED_ERROR_UNREADABLE, /* exists but cannot be read (permissions, I/O) */
} FsManagedError;

/* The largest policy file read. */
#define FS_MANAGED_MAX_SIZE (1024 * 1024)
/* The most protected paths a policy may add. */
#define FS_MANAGED_MAX_PROTECTED 256

/* The policy file in use: $CORRAL_MANAGED_POLICY when set (tests, packagers), else the
 * build-time path. */
const char *fs_managed_policy_path (void);

/* Parses a policy's text. origin names it in errors (a path). On success *ret_protect holds the
 * protected paths it adds and *ret_hide (nullable) the hidden ones (never NULL, possibly
 * empty). (transfer full) */
gboolean fs_managed_parse (const char *data,
                           size_t len,
                           const char *origin,
                           char ***ret_protect,
                           char ***ret_hide,
                           GError **error);

/* Reads and parses the policy at path. A missing file is no policy: TRUE with an empty list.
 * Anything else that stops it being read or parsed is an FS_MANAGED_ERROR that names the file
 * (fs_managed_parse's errors are FS_MANAGED_ERROR_INVALID too). */
gboolean fs_managed_load (const char *path, char ***ret_protect, GError **error);
/* The same, with the hidden paths too (ret_hide nullable). */
gboolean
fs_managed_load_all (const char *path, char ***ret_protect, char ***ret_hide, GError **error);
