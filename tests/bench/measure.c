/*
 * bench_measure: run one command and report what it cost.
 *
 *   bench_measure [-i STDIN_FILE] [-o STDOUT_FILE] -- PROGRAM [ARGS...]
 *
 * Prints "<wall_us> <cpu_us> <exit_code>" on stdout, where wall is fork to reap and cpu is user +
 * system time of the whole process tree (getrusage(RUSAGE_CHILDREN) counts every descendant that
 * was waited for, so an IPAM plugin exec'd by the plugin is included). This process has no other
 * children, so the figure is exactly the command's. The command inherits the environment
 * (CNI_* set by the caller); its stdout goes to STDOUT_FILE (default /dev/null), stderr is
 * inherited.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static long long tv_us(struct timeval tv) { return (long long)tv.tv_sec * 1000000 + tv.tv_usec; }

static long long now_us(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (long long)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

static int open_or_die(const char *path, int flags)
{
	int fd = open(path, flags | O_CLOEXEC, 0644);
	if (fd < 0) {
		fprintf(stderr, "bench_measure: %s: %s\n", path, strerror(errno));
		exit(2);
	}
	return fd;
}

int main(int argc, char **argv)
{
	const char *in = "/dev/null", *out = "/dev/null";
	int opt;
	while ((opt = getopt(argc, argv, "+i:o:")) != -1) {
		if (opt == 'i')
			in = optarg;
		else if (opt == 'o')
			out = optarg;
		else
			return 2;
	}
	if (optind >= argc) {
		fprintf(stderr, "usage: %s [-i STDIN_FILE] [-o STDOUT_FILE] -- PROGRAM [ARGS...]\n", argv[0]);
		return 2;
	}
	/* Opened before the clock starts: only the command is timed. */
	int in_fd = open_or_die(in, O_RDONLY);
	int out_fd = open_or_die(out, O_WRONLY | O_CREAT | O_TRUNC);

	long long start = now_us();
	pid_t pid = fork();
	if (pid < 0) {
		perror("bench_measure: fork");
		return 2;
	}
	if (pid == 0) {
		if (dup2(in_fd, STDIN_FILENO) < 0 || dup2(out_fd, STDOUT_FILENO) < 0)
			_exit(127);
		execvp(argv[optind], &argv[optind]);
		fprintf(stderr, "bench_measure: %s: %s\n", argv[optind], strerror(errno));
		_exit(127);
	}
	int status;
	while (waitpid(pid, &status, 0) < 0) {
		if (errno != EINTR) {
			perror("bench_measure: waitpid");
			return 2;
		}
	}
	long long wall = now_us() - start;

	struct rusage ru;
	getrusage(RUSAGE_CHILDREN, &ru);
	long long cpu = tv_us(ru.ru_utime) + tv_us(ru.ru_stime);
	int code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
	printf("%lld %lld %d\n", wall, cpu, code);
	return 0;
}
