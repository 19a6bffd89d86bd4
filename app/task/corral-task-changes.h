/* corral-task-changes.h — what the assistant changed in a task's shared folders, as the person
 * reviews it: the list (from the change journal corral-fsd keeps, mounts/server/fs-journal.h),
 * one change's before and after for a diff or a preview, and undo and keep. For the app's
 * Changes panel and `corralctl changes|diff|undo|keep` alike. No GTK.
 *
 * Everything read here is the guest's: names are shown escaped by whoever shows them; files
 * are opened beneath their share's folder without following a link (a folder the guest turned
 * into a link is not followed to another place on this computer), read up to a bound, and
 * their contents classified, never trusted.
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#pragma once

#include <gio/gio.h>

G_BEGIN_DECLS

typedef enum {
        CORRAL_TASK_CHANGE_ADDED,
        CORRAL_TASK_CHANGE_MODIFIED,
        CORRAL_TASK_CHANGE_RENAMED, /* and maybe modified too */
        CORRAL_TASK_CHANGE_DELETED,
} CorralTaskChangeKind;

typedef struct {
        CorralTaskChangeKind kind;
        char *share;
        char *path; /* where it is now (deleted: where it was), relative to the share */
        char *origin; /* (nullable) renamed: where it was */
        char *key; /* "SHARE/PATH", how undo names it */
        char type; /* 'f' file, 'd' folder, 'l' link */
        char *folder; /* (nullable) the share's folder on this computer (unknown: NULL) */
        char *host_path; /* (nullable) folder/path */
        char *kept_path; /* (nullable) the original's copy */
        char *lost; /* (nullable) why the original was not kept, a sentence: no undo */
        gboolean content_changed;
        gboolean mode_changed;
        gint64 size_before; /* the original's size; -1: none (added) or not known */
        gint64 size_now; /* the file's size now; -1: not there or not a file */
} CorralTaskChange;

void corral_task_change_free (CorralTaskChange *c);
G_DEFINE_AUTOPTR_CLEANUP_FUNC (CorralTaskChange, corral_task_change_free)

typedef struct {
        GPtrArray *changes; /* (element-type CorralTaskChange) by share and path */
        gboolean complete; /* FALSE: the list filled up; later changes are not in it */
} CorralTaskChanges;

void corral_task_changes_free (CorralTaskChanges *changes);
G_DEFINE_AUTOPTR_CLEANUP_FUNC (CorralTaskChanges, corral_task_changes_free)

/* The changes of the task whose VM folder is vm_dir (which need not exist any more: the
 * journal outlives the VM). Blocks: call it from a worker thread in an app. NULL with an error
 * naming the file and line when the journal is damaged. */
CorralTaskChanges *corral_task_changes_load (const char *vm_dir, GError **error);

/* The size of the regular file at path beneath folder, reached without following a link the
 * guest made; -1 when there is none. */
gint64 corral_task_changes_size_beneath (const char *folder, const char *path);

/* The journal's size and modification time as a string, to tell cheaply (one stat) whether it
 * changed since the last corral_task_changes_load(); "" when there is none. */
char *corral_task_changes_stamp (const char *vm_dir);

/* What became of one change the person asked to undo. */
typedef struct {
        char *key; /* SHARE/PATH */
        char *problem; /* (nullable) NULL: undone; else why not, a sentence */
        gboolean changed_since; /* the problem: it changed on this computer since */
} CorralTaskUndoOutcome;

void corral_task_undo_outcome_free (CorralTaskUndoOutcome *o);

/* Undoes the changes keys names (NULL: all) through the running file server, else directly;
 * force also undoes files changed on this computer since. (element-type CorralTaskUndoOutcome)
 * one per change. Blocks. */
GPtrArray *corral_task_changes_undo (const char *vm_dir,
                                     const char *const *keys,
                                     gboolean force,
                                     GError **error);
/* Keeps every change: the originals are removed. Blocks. */
gboolean corral_task_changes_keep_all (const char *vm_dir, GError **error);

/* One change's contents, to compare ------------------------------------------------------------ */

/* How much of each side is read to compare it (larger: said, not shown). */
#define CORRAL_TASK_DIFF_MAX_TEXT ((gsize) 4 << 20)
/* Images are shown up to this size and these dimensions (PNG and JPEG only). */
#define CORRAL_TASK_DIFF_MAX_IMAGE ((gsize) 16 << 20)
#define CORRAL_TASK_DIFF_MAX_PIXELS ((guint64) 24 << 20)
#define CORRAL_TASK_DIFF_MAX_SIDE 16384u

typedef enum {
        CORRAL_TASK_DIFF_TEXT,
        CORRAL_TASK_DIFF_IMAGE,
        CORRAL_TASK_DIFF_BINARY, /* other content: sizes only */
        CORRAL_TASK_DIFF_TOO_LARGE, /* larger than CORRAL_TASK_DIFF_MAX_TEXT: sizes only */
        CORRAL_TASK_DIFF_NONE, /* nothing to compare (a folder, a link, only its mode) */
        CORRAL_TASK_DIFF_UNAVAILABLE, /* the reason says why */
} CorralTaskDiffKind;

/* A side-by-side line. */
typedef enum {
        CORRAL_TASK_LINE_SAME,
        CORRAL_TASK_LINE_REMOVED, /* left only */
        CORRAL_TASK_LINE_ADDED, /* right only */
        CORRAL_TASK_LINE_FILLER, /* the other side's line has no counterpart here */
} CorralTaskLine;

typedef struct {
        CorralTaskDiffKind kind;
        char *reason; /* UNAVAILABLE: why, a sentence */
        gint64 size_before; /* -1: no original (added) */
        gint64 size_after; /* -1: none now (deleted) */
        /* TEXT: `diff -u` with three lines of context ("" when only the mode or a name
         * changed), and the two sides aligned line for line: before and after hold the same
         * number of lines, line i of each marked in before_lines[i] / after_lines[i]
         * (guint8 CorralTaskLine). */
        char *unified;
        GString *before;
        GString *after;
        GByteArray *before_lines;
        GByteArray *after_lines;
        /* IMAGE: the encoded images (NULL: that side has none), their dimensions checked from
         * the header against the bounds above; decoding is the presenter's. */
        GBytes *before_image;
        GBytes *after_image;
} CorralTaskDiff;

void corral_task_diff_free (CorralTaskDiff *d);
G_DEFINE_AUTOPTR_CLEANUP_FUNC (CorralTaskDiff, corral_task_diff_free)

/* Compares change's original with the file now. Blocks (reads both sides, runs diff(1)). */
CorralTaskDiff *corral_task_change_diff (const CorralTaskChange *change, GError **error);

/* The dimensions a PNG or JPEG header declares; FALSE for anything else or a damaged header.
 * (Exposed for the fuzz target.) */
gboolean corral_task_image_size (const guint8 *data, gsize len, guint *width, guint *height);

G_END_DECLS
