/* fs-ops-check.c — what a change to a path may do: the path rules (fs-paths.h) and git's
 * (fs-git.h), applied with what only the file system can tell (is this folder a git
 * directory, did the guest create it).
 *
 * The server handles one request at a time, so nothing the guest does can come between a
 * check here and the change it allows.
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#include "fs-server-private.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "corral-glib-compat.h"
#include "fs-git.h"
#include "fs-resolve.h"

#define REFUSE(ctx, r, err) ((ctx)->rule = (r), -(err))

/* The last component of path and the length of what comes before it. */
static const char *
last_component (const char *path, size_t *ret_parent_len)
{
        const char *slash = strrchr (path, '/');

        *ret_parent_len = slash ? (size_t) (slash - path) : 0;
        return slash ? slash + 1 : path;
}

static bool
has_entry (int dirfd, const char *name)
{
        struct stat st;
        return fstatat (dirfd, name, &st, AT_SYMLINK_NOFOLLOW) == 0;
}

/* The git directory path lies in, as a prefix length of path (-1: none). A folder is one when
 * it is named .git (at any depth above path) or holds a HEAD; git reads a repository's
 * config, hooks and links at most two levels below it, so a HEAD is looked for in path's
 * folder and the one above. dirfd is path's folder. */
static ssize_t
git_dir_of (const char *path, int dirfd)
{
        size_t parent_len, grand_len = 0;
        ssize_t found = -1;
        const char *p = path;

        last_component (path, &parent_len);
        /* named: the innermost ".git" component above the last one */
        while (p < path + parent_len) {
                const char *slash = memchr (p, '/', (size_t) (path + parent_len - p));
                size_t len = slash ? (size_t) (slash - p) : (size_t) (path + parent_len - p);

                if (fs_git_is_dot_git (p, len))
                        found = (ssize_t) (p - path + len);
                if (!slash)
                        break;
                p = slash + 1;
        }
        if (has_entry (dirfd, "HEAD"))
                return (ssize_t) parent_len;
        if (parent_len > 0) {
                const char *slash = memrchr (path, '/', parent_len);
                grand_len = slash ? (size_t) (slash - path) : 0;
                /* dirfd lies beneath the root (not the root itself): its ".." is still in
                 * the share. */
                if ((ssize_t) grand_len > found && has_entry (dirfd, "../HEAD"))
                        return (ssize_t) grand_len;
        }
        return found;
}

/* Whether the folder path[0..len) was created by the guest in this session. */
static bool
created_here (FsShare *share, const char *path, size_t len)
{
        g_autofree char *dir = g_strndup (path, len);
        g_autofd int fd = -1;

        if (fs_resolve_open (share->root_fd, share->dev, dir, O_PATH | O_DIRECTORY, 0, &fd) < 0)
                return false;
        return fs_share_is_created (share, fd);
}

/* A HEAD arriving in a folder that is not yet a git directory makes it one: refused when the
 * folder already holds what would make that repository run or redirect things. */
static bool
first_head_allowed (int dirfd)
{
        static const char *const control[] = {
                "config", "config.worktree", "commondir", "gitdir", "hooks", "modules", "worktrees",
        };

        for (guint i = 0; i < G_N_ELEMENTS (control); i++)
                if (has_entry (dirfd, control[i]))
                        return false;
        return true;
}

static int
check_git (FsCtx *ctx, FsShare *share, int dirfd, const char *path, FsChange change, mode_t type)
{
        size_t parent_len;
        const char *name = last_component (path, &parent_len);
        size_t name_len = strlen (name);
        ssize_t git = git_dir_of (path, dirfd);
        bool arriving = change == FS_CHANGE_CREATE || change == FS_CHANGE_MOVE_IN;
        const char *rel;

        /* A .git that is a file (gitdir: ...) or a link points git anywhere; a .git folder is
         * a new repository (governed below); one moved in could bring anything. */
        if (fs_git_is_dot_git (name, name_len) &&
            (change == FS_CHANGE_MOVE_IN || (change == FS_CHANGE_CREATE && type != S_IFDIR)))
                return REFUSE (ctx, FS_RULE_GIT, EPERM);
        if (git < 0) {
                if (arriving && fs_git_is_head (name, name_len) && !first_head_allowed (dirfd))
                        return REFUSE (ctx, FS_RULE_GIT, EPERM);
                return 0;
        }
        if (arriving && type == S_IFLNK)
                return REFUSE (ctx, FS_RULE_GIT, EPERM); /* git writes no links there */
        rel = path + git + (path[git] == '/' ? 1 : 0);
        switch (fs_git_entry (rel)) {
        case FS_GIT_OK:
                /* info/ holds only a few names: a whole folder moved in would bypass them. */
                if (change == FS_CHANGE_MOVE_IN && type == S_IFDIR &&
                    g_ascii_strncasecmp (rel, "info", 4) == 0 && (rel[4] == '\0' || rel[4] == '/'))
                        return REFUSE (ctx, FS_RULE_GIT, EPERM);
                return 0;
        case FS_GIT_CONFIG_LOCK:
                return created_here (share, path, (size_t) git) ? 0
                                                                : REFUSE (ctx, FS_RULE_GIT, EPERM);
        case FS_GIT_CONFIG:
                /* Only replaced whole, by a rename whose text the caller checks
                 * (FS_CHECK_CONFIG); removing it from a repository the guest made is harmless. */
                if (!created_here (share, path, (size_t) git))
                        return REFUSE (ctx, FS_RULE_GIT, EPERM);
                if (change == FS_CHANGE_REMOVE)
                        return 0;
                if (change == FS_CHANGE_MOVE_IN && type == S_IFREG)
                        return FS_CHECK_CONFIG;
                return REFUSE (ctx, FS_RULE_GIT, EPERM);
        case FS_GIT_REFUSED:
        default:
                return REFUSE (ctx, FS_RULE_GIT, EPERM);
        }
}

int
fs_check_change (
        FsCtx *ctx, FsShare *share, int dirfd, const char *path, FsChange change, mode_t type)
{
        switch (fs_path_rules_classify (share->paths, path)) {
        case FS_PATH_HIDDEN:
                return REFUSE (ctx, FS_RULE_HIDDEN, EPERM);
        case FS_PATH_PROTECTED:
                return REFUSE (ctx, FS_RULE_PROTECTED, EPERM);
        case FS_PATH_PLAIN:
        default:
                break;
        }
        /* Moving a folder on the way to such paths, or moving something onto its name, moves
         * them out from under their rule. (A new empty folder moves nothing.) */
        if ((change == FS_CHANGE_REMOVE || change == FS_CHANGE_MOVE_IN) &&
            fs_path_rules_is_ancestor (share->paths, path))
                return REFUSE (ctx, FS_RULE_PROTECTED, EPERM);
        return check_git (ctx, share, dirfd, path, change, type & S_IFMT);
}

int
fs_check_change_at (FsCtx *ctx, FsShare *share, const char *path, FsChange change, mode_t type)
{
        g_autofree char *parent = NULL;
        g_autofd int dirfd = -1;
        size_t parent_len;
        int r;

        last_component (path, &parent_len);
        parent = g_strndup (path, parent_len);
        r = fs_resolve_open (share->root_fd, share->dev, parent, O_PATH | O_DIRECTORY, 0, &dirfd);
        if (r < 0)
                return r;
        return fs_check_change (ctx, share, dirfd, path, change, type);
}

bool
fs_check_hidden (FsServer *s, FsShare *share, const char *path, const struct stat *st)
{
        return fs_path_rules_classify (share->paths, path) == FS_PATH_HIDDEN ||
               (st && fs_server_is_own_dir (s, st));
}

/* Renames ------------------------------------------------------------------------------------- */

#define MAX_SCAN_ENTRIES 100000

/* Whether the link name in dirfd may sit at a folder depth of depth below the share root:
 * a link the guest made climbs no higher than the root (fs_symlink_climb); one in another
 * form (the person's own) must at least stay inside by its text. */
static bool
link_fits (int dirfd, const char *name, int depth)
{
        char target[FS_MAX_SYMLINK + 1];
        ssize_t n = readlinkat (dirfd, name, target, sizeof target);
        int climb;

        if (n < 0 || (size_t) n > FS_MAX_SYMLINK)
                return false;
        climb = fs_symlink_climb (target, (size_t) n);
        if (climb >= 0)
                return climb <= depth;
        {
                /* fs_symlink_target_inside judges from a link path: make one that deep. */
                g_autoptr (GString) at = g_string_new (NULL);
                for (int i = 0; i < depth; i++)
                        g_string_append (at, "d/");
                g_string_append (at, "l");
                return fs_symlink_target_inside (at->str, target, (size_t) n);
        }
}

/* Whether every link in the folder fd (at depth below the root once moved) still fits.
 * Counts entries into *budget; false when it runs out (too much to check). */
static bool
links_fit_below (int fd, int depth, guint *budget)
{
        g_autoptr (GPtrArray) dirs = g_ptr_array_new_with_free_func (g_free);
        g_autofd int dfd = fcntl (fd, F_DUPFD_CLOEXEC, 3);
        DIR *dir;
        struct dirent *e;
        bool ok = true;

        if (dfd < 0 || depth > 256)
                return false;
        dir = fdopendir (dfd);
        if (!dir)
                return false;
        dfd = -1; /* owned by dir */
        while (ok && (e = readdir (dir))) {
                if (strcmp (e->d_name, ".") == 0 || strcmp (e->d_name, "..") == 0)
                        continue;
                if (*budget == 0) {
                        ok = false;
                        break;
                }
                (*budget)--;
                if (e->d_type == DT_LNK)
                        ok = link_fits (dirfd (dir), e->d_name, depth);
                else if (e->d_type == DT_DIR)
                        g_ptr_array_add (dirs, g_strdup (e->d_name));
                else if (e->d_type == DT_UNKNOWN)
                        ok = false; /* no type from this file system: do not guess */
        }
        for (guint i = 0; ok && i < dirs->len; i++) {
                g_autofd int sub = openat (dirfd (dir), dirs->pdata[i],
                                           O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
                ok = sub >= 0 && links_fit_below (sub, depth + 1, budget);
        }
        closedir (dir);
        return ok;
}

/* What moving name (in dirfd) to a folder depth of new_depth does to links (SECURITY.md F3):
 * a link moved, or a folder moved higher with links inside, must still resolve inside the
 * share on the host. */
static int
check_links_moved (FsCtx *ctx,
                   int dirfd,
                   const char *name,
                   const struct stat *st,
                   int old_depth,
                   int new_depth)
{
        guint budget = MAX_SCAN_ENTRIES;
        g_autofd int fd = -1;

        if (S_ISLNK (st->st_mode))
                return link_fits (dirfd, name, new_depth) ? 0
                                                          : REFUSE (ctx, FS_RULE_OUTSIDE, EPERM);
        if (!S_ISDIR (st->st_mode) || new_depth >= old_depth)
                return 0; /* deeper or level: every link climbs as far as it did */
        fd = openat (dirfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (fd < 0)
                return -errno;
        /* Too much to check, or a link that would leave: the caller's mv copies instead. */
        if (!links_fit_below (fd, new_depth + 1, &budget))
                return REFUSE (ctx, FS_RULE_OUTSIDE, EXDEV);
        return 0;
}

/* A repository config the guest created, replaced by a rename: its text must pass the git
 * allowlist, and nothing may still hold the file open for writing (the text checked is the
 * text that stays). */
static int
check_config_text (FsCtx *ctx, int dirfd, const char *name)
{
        g_autofd int fd = openat (dirfd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
        g_autofree char *text = NULL, *problem = NULL;
        GHashTableIter iter;
        FsHandle *h;
        struct stat st;
        ssize_t n;

        if (fd < 0)
                return -errno;
        if (fstat (fd, &st) < 0)
                return -errno;
        if (!S_ISREG (st.st_mode) || st.st_nlink != 1 || st.st_size > FS_GIT_CONFIG_MAX) {
                ctx->detail = g_strdup ("not a small regular file");
                return REFUSE (ctx, FS_RULE_GIT, EPERM);
        }
        text = g_malloc (FS_GIT_CONFIG_MAX + 1);
        n = pread (fd, text, FS_GIT_CONFIG_MAX + 1, 0);
        if (n < 0)
                return -errno;
        if (!fs_git_config_check (text, (size_t) n, &problem)) {
                ctx->detail = g_steal_pointer (&problem);
                return REFUSE (ctx, FS_RULE_GIT, EPERM);
        }
        g_hash_table_iter_init (&iter, ctx->s->handles);
        while (g_hash_table_iter_next (&iter, NULL, (gpointer *) &h)) {
                struct stat hst;
                if (h->can_write && h->fd >= 0 && fstat (h->fd, &hst) == 0 &&
                    hst.st_dev == st.st_dev && hst.st_ino == st.st_ino) {
                        ctx->detail = g_strdup ("still open for writing");
                        return REFUSE (ctx, FS_RULE_GIT, EPERM);
                }
        }
        return 0;
}

/* One direction of a rename: what is at from (in fromfd) arrives at to (in tofd). */
static int
check_move (FsCtx *ctx,
            FsShare *share,
            int fromfd,
            const char *from_name,
            const char *from,
            int tofd,
            const char *to)
{
        struct stat st;
        int r;

        if (fstatat (fromfd, from_name, &st, AT_SYMLINK_NOFOLLOW) < 0)
                return -errno;
        r = fs_check_change (ctx, share, fromfd, from, FS_CHANGE_REMOVE, 0);
        if (r < 0)
                return r;
        r = fs_check_change (ctx, share, tofd, to, FS_CHANGE_MOVE_IN, st.st_mode);
        if (r == FS_CHECK_CONFIG)
                r = check_config_text (ctx, fromfd, from_name);
        if (r < 0)
                return r;
        return check_links_moved (ctx, fromfd, from_name, &st, fs_path_depth (from) - 1,
                                  fs_path_depth (to) - 1);
}

int
fs_check_rename (FsCtx *ctx,
                 FsShare *share,
                 int dirfd,
                 const char *name,
                 const char *path,
                 int ndirfd,
                 const char *newname,
                 const char *npath,
                 bool exchange)
{
        int r = check_move (ctx, share, dirfd, name, path, ndirfd, npath);

        if (r == 0 && exchange)
                r = check_move (ctx, share, ndirfd, newname, npath, dirfd, path);
        else if (r == 0 && has_entry (ndirfd, newname))
                r = fs_check_change (ctx, share, ndirfd, npath, FS_CHANGE_REMOVE, 0);
        return r;
}
