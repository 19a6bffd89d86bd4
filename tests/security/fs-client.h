/* fs-client.h — a test client that speaks the file-service protocol to an in-process FsServer
 * (or, through fs_client_call_raw, feeds it any bytes at all), the way a hostile guest could.
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#pragma once

#include <glib.h>

#include "fs-server.h"

typedef struct {
        char *dir; /* temp folder holding share/, outside/, other/, keep/, audit.jsonl */
        char *share; /* dir/share: shared as "s" */
        char *outside; /* dir/outside: must never change */
        char *audit_path;
        FsAudit *audit;
        FsServer *server;
        uint8_t *buf;
        uint8_t *request; /* the request being encoded: one buffer for all (a 1 MiB allocation
                           * per call made ASan runs of the flood tests take many minutes) */
        char last_rule[FS_MAX_RULE + 1];
} FsClient;

/* A fresh layout with the share "s" in mode. */
FsClient *fs_client_new (FsMode mode);
void fs_client_free (FsClient *c);
G_DEFINE_AUTOPTR_CLEANUP_FUNC (FsClient, fs_client_free)

/* Sends an encoded request payload; returns 0 or -errno from the reply, the body in *body
 * (borrowed until the next call). The refusal rule, if any, is in c->last_rule. */
int fs_client_call_raw (FsClient *c, const uint8_t *payload, size_t len, FsReader *body);
int fs_client_call (FsClient *c, const FsRequest *q, FsReader *body);

/* Convenience wrappers: node ids, handles, 0 or -errno. */
int fs_client_lookup (FsClient *c, uint64_t parent, const char *name, FsEntry *ret);
/* Looks up "s/a/b" from the workspace root, component by component. */
int fs_client_walk (FsClient *c, const char *path, FsEntry *ret);
int fs_client_open (FsClient *c, uint64_t node, uint32_t flags, uint64_t *ret_handle);
int fs_client_create (FsClient *c,
                      uint64_t parent,
                      const char *name,
                      uint32_t mode,
                      uint32_t flags,
                      FsEntry *ret_entry,
                      uint64_t *ret_handle);
int fs_client_write (FsClient *c, uint64_t handle, uint64_t offset, const void *data, size_t len);
int fs_client_read (FsClient *c, uint64_t handle, uint64_t offset, uint32_t size, GBytes **ret);
int fs_client_release (FsClient *c, uint64_t handle);
int fs_client_mkdir (FsClient *c, uint64_t parent, const char *name, uint32_t mode, FsEntry *ret);
int fs_client_unlink (FsClient *c, uint64_t parent, const char *name);
int fs_client_rmdir (FsClient *c, uint64_t parent, const char *name);
int fs_client_rename (FsClient *c,
                      uint64_t parent,
                      const char *name,
                      uint64_t newparent,
                      const char *newname,
                      uint32_t flags);
int fs_client_symlink (
        FsClient *c, uint64_t parent, const char *name, const char *target, FsEntry *ret);
int fs_client_link (FsClient *c, uint64_t node, uint64_t newparent, const char *newname);
int fs_client_readlink (FsClient *c, uint64_t node, char **ret);
int fs_client_setattr (FsClient *c, uint64_t node, const FsSetattr *set);
int fs_client_simple (FsClient *c, uint16_t op, uint64_t node, const char *name);

/* Writes a whole file through the protocol: CREATE (or OPEN with truncate) + WRITE + RELEASE. */
int fs_client_put (FsClient *c, const char *path, const char *content);

/* Registers each test twice, as /PREFIX/openat2/NAME and /PREFIX/fallback/NAME: once with
 * openat2 and once with the per-component walk (fs-resolve.h). */
typedef struct {
        const char *name;
        GTestFunc func;
} FsClientTest;
void fs_client_add_variants (const char *prefix, const FsClientTest *tests, guint n_tests);

/* Host-side helpers */
char *fs_client_host (FsClient *c, const char *rel); /* share/rel */
void fs_client_host_write (FsClient *c, const char *rel, const char *content);
char *fs_client_host_read (FsClient *c, const char *rel); /* NULL if missing */
/* A digest of every name, type and content under dir (lstat, never following links). */
char *fs_client_tree_digest (const char *dir);
/* The audit log's lines (parsed lazily by the tests with strstr). */
char *fs_client_audit_text (FsClient *c);
