#!/usr/bin/env bash
# git-attacks.sh MNT HOST MARKERS — SECURITY-TESTS.md 32, end to end at the file system.
#
# MNT is a share mounted the way the guest sees it (corral-fs, or /workspace/NAME in a VM);
# HOST is the same folder on the person's computer; MARKERS an empty folder on the host. As a
# hostile agent would, it tries every way git offers to make the person's computer run
# something, and checks that everyday git work in the share still works. Then, as the person,
# it runs git status, diff, log, commit and fetch in every repository under HOST: every
# command the agent tried to plant would leave a file in MARKERS; none may appear.
#
# With --guest-only / --host-only (the VM test) the two halves run on their own sides.
# Exit status: 0 when every expectation held; the failed ones are printed.
set -u
side=both
case "${1:-}" in
--guest-only | --host-only) side=${1#--}; side=${side%-only}; shift ;;
esac
mnt=${1:?MNT} host=${2:?HOST} markers=${3:?MARKERS}
failed=0

say() { printf '%s\n' "$*"; }
expect_refused() {
	if "$@" >/dev/null 2>&1; then
		say "NOT REFUSED: $*"
		failed=1
	fi
}
expect_ok() {
	local out
	if ! out=$("$@" 2>&1); then
		say "FAILED: $*"
		say "$out"
		failed=1
	fi
}
# A command that leaves a marker named $1 when anything runs it.
plant() { printf 'touch %s/%s' "$markers" "$1"; }

G=(git -c init.templateDir= -c init.defaultBranch=main -c user.name=Agent -c user.email=agent@example.org)

guest_side() {
	local repo=$mnt/repo new=$mnt/new
	# The person's repository (made on the host before the session).
	expect_refused "${G[@]}" -C "$repo" config core.fsmonitor "$(plant fsmonitor)"
	expect_refused "${G[@]}" -C "$repo" config core.hooksPath "$markers"
	expect_refused "${G[@]}" -C "$repo" config alias.st "!$(plant alias)"
	expect_refused sh -c "printf '#!/bin/sh\n$(plant hook)\n' > '$repo/.git/hooks/pre-commit'"
	expect_refused chmod +x "$repo/.git/hooks/pre-commit.sample"
	expect_refused mv "$repo/.git/hooks/pre-commit.sample" "$repo/.git/hooks/pre-commit"
	expect_refused sh -c "printf '#!/bin/sh\n$(plant hook-rename)\n' > '$mnt/ready' && chmod +x '$mnt/ready' && mv '$mnt/ready' '$repo/.git/hooks/post-commit'"
	rm -f "$mnt/ready"
	expect_refused sh -c "echo ../../evil > '$repo/.git/commondir'"
	expect_refused mkdir -p "$repo/.git/worktrees/w"
	expect_refused mkdir "$repo/.git/modules"
	expect_refused sh -c "echo '* diff=evil' > '$repo/.git/info/attributes'"
	expect_refused sh -c "echo 'gitdir: $mnt/evilgit' > '$repo/src/.git'"
	expect_refused ln -s ../.git "$repo/src/.git"
	mkdir -p "$mnt/evilgit/hooks" 2>/dev/null
	expect_refused mv "$mnt/evilgit" "$repo/src/.git"
	rm -rf "$mnt/evilgit"
	expect_refused sh -c "mkdir -p '$repo/.github/workflows' && echo 'on: push' > '$repo/.github/workflows/x.yml'"
	expect_refused sh -c "mkdir -p '$repo/.vscode' && echo '{}' > '$repo/.vscode/tasks.json'"
	expect_refused sh -c "mkdir -p '$repo/.husky' && echo '$(plant husky)' > '$repo/.husky/pre-commit'"
	expect_refused sh -c "echo 'pre-commit: {commands: {x: {run: touch m}}}' > '$repo/lefthook.yml'"
	expect_refused sh -c "echo 'repos: []' > '$repo/.pre-commit-config.yaml'"
	# ... while everyday work on it goes on.
	expect_ok sh -c "echo change >> '$repo/README'"
	expect_ok "${G[@]}" -C "$repo" commit -qam "agent change"
	expect_ok "${G[@]}" -C "$repo" checkout -qb agent-branch
	expect_ok "${G[@]}" -C "$repo" log --oneline

	# A repository the agent creates: its own, but its config runs nothing.
	expect_ok "${G[@]}" init -q "$new"
	expect_ok sh -c "echo one > '$new/a.txt'"
	expect_ok "${G[@]}" -C "$new" add a.txt
	expect_ok "${G[@]}" -C "$new" commit -qm one
	expect_refused "${G[@]}" -C "$new" config core.fsmonitor "$(plant fsmonitor-new)"
	expect_refused "${G[@]}" -C "$new" config core.hooksPath "$markers"
	expect_refused "${G[@]}" -C "$new" config core.pager "$(plant pager)"
	expect_refused "${G[@]}" -C "$new" config alias.st "!$(plant alias-new)"
	expect_refused "${G[@]}" -C "$new" config include.path "$markers/evil.cfg"
	expect_refused "${G[@]}" -C "$new" config filter.x.clean "$(plant filter)"
	expect_refused "${G[@]}" -C "$new" remote add evil "ext::sh -c $(plant ext)"
	expect_refused mkdir "$new/.git/hooks"
	expect_ok "${G[@]}" -C "$new" config user.name "Agent Smith"
	expect_ok "${G[@]}" -C "$new" remote add origin https://example.org/r.git
	expect_ok "${G[@]}" -C "$new" checkout -qb feature
	expect_ok sh -c "echo two > '$new/b.txt'"
	expect_ok "${G[@]}" -C "$new" add b.txt
	expect_ok "${G[@]}" -C "$new" commit -qm two
	expect_ok "${G[@]}" -C "$new" checkout -q main
	expect_ok sh -c "echo three > '$new/c.txt'"
	expect_ok "${G[@]}" -C "$new" add c.txt
	expect_ok "${G[@]}" -C "$new" commit -qm three
	expect_ok "${G[@]}" -C "$new" rebase -q feature
	expect_ok sh -c "echo four >> '$new/a.txt'"
	expect_ok "${G[@]}" -C "$new" stash -q
	expect_ok "${G[@]}" -C "$new" stash pop -q
	expect_ok "${G[@]}" -C "$new" commit -qam four
	expect_ok "${G[@]}" -C "$new" gc -q
	expect_ok "${G[@]}" -C "$new" fsck --no-progress
	if [ -d "$mnt/remote.git" ]; then
		expect_ok "${G[@]}" clone -q "$mnt/remote.git" "$mnt/remote-clone"
		expect_ok "${G[@]}" -C "$mnt/remote-clone" fetch -q
	fi
	# A folder with a HEAD is a repository to git: config first, then HEAD, is refused.
	expect_ok mkdir -p "$mnt/bare/objects" "$mnt/bare/refs"
	expect_ok sh -c "printf '[core]\n\tfsmonitor = $(plant bare)\n' > '$mnt/bare/config'"
	expect_refused sh -c "echo 'ref: refs/heads/main' > '$mnt/bare/HEAD'"
	# Links that look inside alone but climb out as a chain.
	expect_ok ln -s .. "$new/l1"
	expect_refused ln -s l1/.. "$new/up"
	expect_refused ln -s l1/../../etc/passwd "$new/passwd"
}

host_side() {
	local home=$markers/home r
	mkdir -p "$home"
	for r in "$host"/repo "$host"/new "$host"/remote-clone "$host"/bare "$host"; do
		[ -d "$r" ] || continue
		# The person's own git, as a prompt, an editor or they would run it.
		(
			cd "$r" || exit
			export HOME=$home GIT_CONFIG_NOSYSTEM=1 GIT_AUTHOR_NAME=Person GIT_COMMITTER_NAME=Person \
				GIT_AUTHOR_EMAIL=p@example.org GIT_COMMITTER_EMAIL=p@example.org
			git status
			git diff
			git log --oneline -3
			git commit -q --allow-empty -m "the person's commit"
			git fetch -q --all
		) >/dev/null 2>&1
	done
	local planted
	planted=$(find "$markers" -mindepth 1 -maxdepth 1 ! -name home -printf '%f ')
	if [ -n "$planted" ]; then
		say "RAN ON THE HOST: $planted"
		failed=1
	fi
	for r in "$host"/repo "$host"/new; do
		if find "$r/.git/hooks" -type f -perm -u+x ! -name '*.sample' 2>/dev/null | grep -q .; then
			say "EXECUTABLE HOOK in $r"
			failed=1
		fi
	done
}

[ "$side" = host ] || guest_side
[ "$side" = guest ] || host_side
if [ "$failed" -eq 0 ]; then
	say "git-attacks: every vector refused, everyday git work done, nothing ran on the host"
fi
exit "$failed"
