/* fs-journal.h — a task's change journal: what the guest changed in its shared folders, with
 * where the original of each changed file was kept, so that the person can review and undo it.
 *
 * corral-fsd appends one JSON object per line to KEEP_DIR/changes.jsonl (KEEP_DIR is the VM's
 * keep folder, outside every share and outside the VM's folder, so it outlives the VM):
 *
 *   {"t":"keep","share":"notes","path":"a.txt","copy":"notes/20261205T031500-3-a.txt",
 *    "size":12,"mode":420,"mtime":1764900000,"mtime_ns":5,"time":1764900900123456}
 *   {"t":"add","share":"notes","path":"b","kind":"dir","time":…}
 *   {"t":"rename","share":"notes","path":"a.txt","to":"b/a.txt","kind":"file",
 *    "replaced":"file","time":…}
 *   {"t":"delete","share":"notes","path":"old.txt","kind":"file","mode":420,…}
 *   {"t":"meta","share":"notes","path":"run.sh","mode":420,"time":…}
 *   {"t":"writing","share":"notes","path":"a.txt","time":…}
 *   {"t":"wrote","share":"notes","path":"a.txt","size":20,"mtime":…,"mtime_ns":…,"time":…}
 *   {"t":"undone","share":"notes","path":"a.txt","time":…}
 *   {"t":"share","share":"notes","folder":"/home/ada/Notes","time":…}
 *   {"t":"full","time":…}
 *   {"t":"times","share":"notes","path":"a.txt","mtime":…,"mtime_ns":…,"time":…}
 *
 * "keep" comes before the first change to a file that existed (its content, mode and time as
 * they were); without "copy" it names why there is none ("lost": "budget", "too-large") and
 * that change cannot be undone. "meta" keeps a mode before its first change, "times" a file's
 * modification time before one changes it without changing its content. "wrote" is a file's
 * size and time after the guest wrote it (so that an undo notices a change made on the host
 * since); "writing" comes before the guest writes, so that a file the server was killed while
 * writing (or that is still open) is not taken for one changed on the host. "undone" says the person undid the change listed at that path. "share" names the
 * folder on this computer a share was, before the first line about it from each server (so
 * that changes can be undone after the VM is removed). When the person keeps or undoes every
 * change, the journal is emptied. "full" ends a journal that reached FS_JOURNAL_MAX_SIZE: what
 * the guest changed after it is not recorded (and cannot be undone; rw-nodelete then refuses
 * changes that would lose content). Lines are
 * appended whole with one write(), a "keep" line is synced before the change it precedes, and
 * a reader ignores a last line cut short by a crash: after a kill -9 at any point the journal
 * reads, and every file is whole either in its share or in its kept copy.
 *
 * The reader treats the file as untrusted (the person's disk, an older version): bounded
 * lines and counts, every field checked; a damaged line is an error naming its number.
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#pragma once

#include <glib.h>
#include <stdbool.h>
#include <stdint.h>

#define FS_JOURNAL_FILE "changes.jsonl"
#define FS_JOURNAL_MAX_LINE (64u * 1024u)
#define FS_JOURNAL_MAX_RECORDS 1000000u
/* The writer stops before this (the guest decides how much is written): a last "full" line,
 * then nothing. Well within what the reader takes (at least 100 bytes a line). */
#define FS_JOURNAL_MAX_SIZE ((gint64) 64 << 20)

typedef enum {
        FS_JOURNAL_KEEP,
        FS_JOURNAL_ADD,
        FS_JOURNAL_DELETE,
        FS_JOURNAL_RENAME,
        FS_JOURNAL_META,
        FS_JOURNAL_WROTE,
        FS_JOURNAL_UNDONE,
        FS_JOURNAL_SHARE,
        FS_JOURNAL_TIMES,
        FS_JOURNAL_WRITING,
        FS_JOURNAL_FULL,
} FsJournalType;

typedef struct {
        FsJournalType type;
        char *share; /* NULL for full */
        char *path; /* NULL for share and full */
        char *folder; /* share: the absolute path of the share's folder */
        char *to; /* rename */
        char *copy; /* keep: relative to the keep folder; NULL when none was made */
        char *lost; /* keep without a copy: why */
        char kind; /* add, delete, rename (what moved): 'f' file, 'd' folder, 'l' link; or 0 */
        char replaced; /* rename: what was at "to" before (or 0), the same letters */
        bool exchange; /* rename: the two swapped */
        bool has_mode;
        uint32_t mode; /* permission bits */
        bool has_mtime;
        int64_t mtime;
        uint32_t mtime_ns;
        uint64_t size;
        int64_t time; /* when it was recorded: µs since the epoch */
} FsJournalRecord;

void fs_journal_record_free (FsJournalRecord *rec);
G_DEFINE_AUTOPTR_CLEANUP_FUNC (FsJournalRecord, fs_journal_record_free)

/* One line (without its newline) to a record, or NULL with error set. */
FsJournalRecord *fs_journal_parse_line (const char *line, size_t len, GError **error);
/* The record as one line, with its newline. */
char *fs_journal_format (const FsJournalRecord *rec);

/* Every record of keep_dir's journal (an empty array when there is none), in order; a last
 * line without its newline (a write cut short) is left out. */
GPtrArray *fs_journal_read (const char *keep_dir, GError **error);
/* The same from bytes (the fuzz target). */
GPtrArray *fs_journal_parse (const char *data, size_t len, GError **error);

/* Writing (corral-fsd) ------------------------------------------------------------------------- */

typedef struct _FsJournal FsJournal;

/* Opens keep_dir's journal for appending (made 0600 when first written); a last line cut
 * short is cut off first. */
FsJournal *fs_journal_open (const char *keep_dir);
void fs_journal_close (FsJournal *j);
G_DEFINE_AUTOPTR_CLEANUP_FUNC (FsJournal, fs_journal_close)
/* Appends rec (its time set here); sync: on disk before this returns. 0 or -errno. */
int fs_journal_append (FsJournal *j, FsJournalRecord *rec, bool sync);
/* Empties the journal (every change kept or undone), synced. 0 or -errno. */
int fs_journal_empty (FsJournal *j);
/* Whether the journal reached its size (fs_journal_append then fails with -EFBIG). */
bool fs_journal_is_full (FsJournal *j);
/* Tests: a smaller size than FS_JOURNAL_MAX_SIZE. */
void fs_journal_set_max_size (FsJournal *j, gint64 max);
/* Whether records end before the journal filled up (no "full" line): every change is there. */
bool fs_journal_complete (GPtrArray *records);

/* What changed ------------------------------------------------------------------------------- */

typedef enum {
        FS_JOURNAL_ADDED,
        FS_JOURNAL_MODIFIED,
        FS_JOURNAL_RENAMED, /* and maybe modified too */
        FS_JOURNAL_DELETED,
} FsJournalChangeKind;

/* One path's change since the task began: the journal's records folded. */
typedef struct {
        FsJournalChangeKind kind;
        char *share;
        char *path; /* where it is now (deleted: where it was) */
        char *origin; /* renamed: where it was */
        char *copy; /* the original content, relative to the keep folder (NULL: none) */
        char *lost; /* why the original content was not kept (it cannot be undone) */
        char type; /* 'f', 'd', 'l' */
        bool content_changed;
        bool mode_changed;
        bool time_changed; /* only its modification time (a touch) */
        bool has_mode;
        uint32_t mode; /* the original mode */
        bool has_mtime;
        int64_t mtime;
        uint32_t mtime_ns;
        uint64_t size; /* the original size (kept or deleted files) */
        /* The file as the guest last left it (its last "wrote"), to notice a change since. */
        bool has_after;
        uint64_t after_size;
        int64_t after_mtime;
        uint32_t after_mtime_ns;
} FsJournalChange;

void fs_journal_change_free (FsJournalChange *c);
G_DEFINE_AUTOPTR_CLEANUP_FUNC (FsJournalChange, fs_journal_change_free)
/* The changes the records add up to (FsJournalChange, owned), sorted by share and path: a file
 * made and removed again is no change; an editor's save (a new file renamed over the old) is
 * one modified file. */
GPtrArray *fs_journal_changes (GPtrArray *records);
const char *fs_journal_change_kind_name (FsJournalChangeKind kind);
/* The folder each share was, from the records' "share" lines (the last one wins): share name
 * -> absolute path. */
GHashTable *fs_journal_share_folders (GPtrArray *records);
