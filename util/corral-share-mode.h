/* corral-share-mode.h — what a shared folder lets the assistant do: the three modes, their
 * names on the command line and in files ("ro", "rw", "rw-nodelete"), and the words people
 * read ("Can read", "Can edit", "Can edit, but not delete"), defined once for the file server,
 * corralctl and the app.
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#pragma once

#include <glib.h>

G_BEGIN_DECLS

typedef enum {
        FS_MODE_RO,
        FS_MODE_RW,
        FS_MODE_RW_NODELETE,
} FsMode;

/* "ro", "rw" or "rw-nodelete"; FALSE for anything else. */
gboolean fs_mode_parse (const char *text, FsMode *ret);
const char *fs_mode_to_string (FsMode mode);
/* "Can read", "Can edit", "Can edit, but not delete" (translated). */
const char *fs_mode_describe (FsMode mode);
/* One sentence that says what the mode lets the assistant do (translated). */
const char *fs_mode_explain (FsMode mode);

G_END_DECLS
