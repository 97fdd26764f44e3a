/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Results: perftest's arithmetic (print_report_bw, print_report_lat) and its
 * table, plus CSV and JSON for scripts.
 */
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "perftest.h"

/* perftest_parameters.h, same columns. */
#define PT_RESULT_LINE "---------------------------------------------------------------------------------------\n"
#define PT_FMT_BW      " #bytes     #iterations    BW peak[MiB/sec]    BW average[MiB/sec]   MsgRate[Mpps]\n"
#define PT_FMT_BW_G    " #bytes     #iterations    BW peak[Gb/sec]    BW average[Gb/sec]   MsgRate[Mpps]\n"
#define PT_FMT_LAT     " #bytes #iterations    t_min[usec]    t_max[usec]  t_typical[usec]    t_avg[usec]" \
		       "    t_stdev[usec]   99% percentile[usec]   99.9% percentile[usec] \n"
#define PT_FMT_LAT_DUR " #bytes        #iterations       t_avg[usec]    tps average\n"
#define PT_ROW_BW      " %-7" PRIu64 "    %-10" PRIu64 "       %-7.2f            %-7.2f\t\t     %-7.6f\n"
#define PT_ROW_BW_EXT  " %-7" PRIu64 "    %" PRIu64 "           %-7.6f            %-7.6f            %-7.6f\n"
#define PT_ROW_LAT     " %-7" PRIu64 " %" PRIu64 "          %-7.2f        %-7.2f      %-7.2f  \t       %-7.2f" \
		       "     \t%-7.2f\t\t%-7.2f \t\t%-7.2f\n"
#define PT_ROW_LAT_DUR " %-7" PRIu64 "       %" PRIu64 "            %-7.2f        %-7.2f\n"

static double pt_bw_unit(bool gbits)
{
	return gbits ? 125000000.0 : 1048576.0;     /* Gb/s or MiB/s */
}

void pt_bw_compute(const uint64_t *tposted, const uint64_t *tcompleted, uint64_t n,
		   uint64_t size, uint32_t cq_mod, bool no_peak, bool gbits, struct pt_result *r)
{
	double unit = pt_bw_unit(gbits), total, opt;

	r->size = size;
	r->iters = n;
	r->bw_peak = r->bw_avg = r->msg_rate = r->seconds = 0;
	if (n == 0 || tcompleted[n - 1] <= tposted[0])
		return;
	total = (double)(tcompleted[n - 1] - tposted[0]);
	r->seconds = total / 1e9;
	r->bw_avg = (double)size * (double)n / r->seconds / unit;
	r->msg_rate = (double)n / r->seconds / 1e6;
	if (no_peak)
		return;
	if (cq_mod < 1)
		cq_mod = 1;
	/* The best time per message over every window that starts at a post
	 * and ends at a signaled completion. */
	opt = total / (double)n;
	for (uint64_t i = 0; i < n; i++) {
		uint64_t j = (i + cq_mod) / cq_mod * cq_mod - 1;    /* round_up(i + 1, cq_mod) - 1 */

		for (; j < n; j += cq_mod) {
			double t = (double)(tcompleted[j] - tposted[i]) / (double)(j - i + 1);

			if (t > 0 && t < opt)
				opt = t;
		}
		if (n % cq_mod) {
			j = n - 1;
			double t = (double)(tcompleted[j] - tposted[i]) / (double)(j - i + 1);

			if (t > 0 && t < opt)
				opt = t;
		}
	}
	if (opt > 0)
		r->bw_peak = (double)size * 1e9 / opt / unit;
}

static int pt_cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

int pt_lat_compute(uint64_t *samples, uint64_t n, unsigned int rtt_factor, struct pt_result *r)
{
	uint64_t keep, i99, i999;
	double div = 1000.0 * (rtt_factor ? rtt_factor : 1), sum = 0, var = 0;

	r->lat = true;
	if (n == 0)
		return -1;
	qsort(samples, n, sizeof(*samples), pt_cmp_u64);
	keep = n > PT_LAT_TAIL ? n - PT_LAT_TAIL : n;   /* drop the largest, like perftest */
	for (uint64_t i = 0; i < keep; i++)
		sum += (double)samples[i] / div;
	r->t_avg = sum / (double)keep;
	for (uint64_t i = 0; i < keep; i++) {
		double d = (double)samples[i] / div - r->t_avg;

		var += d * d;
	}
	r->t_stdev = sqrt(var / (double)keep);
	r->t_min = (double)samples[0] / div;
	r->t_max = (double)samples[keep - 1] / div;
	r->t_typical = keep % 2 ? (double)samples[keep / 2] / div :
		       ((double)samples[keep / 2 - 1] + (double)samples[keep / 2]) / 2 / div;
	/* nearest rank */
	i99 = (uint64_t)ceil(0.99 * (double)keep);
	i999 = (uint64_t)ceil(0.999 * (double)keep);
	r->t_p99 = (double)samples[(i99 ? i99 : 1) - 1] / div;
	r->t_p999 = (double)samples[(i999 ? i999 : 1) - 1] / div;
	return 0;
}

/* The -D window of a side as a result: count and seconds. */
static bool pt_window_result(const struct pt_side *s, struct pt_result *r)
{
	const struct pt_window *w = &s->win;

	r->duration = true;
	if (!w->stopped || w->t_stop_seen <= w->t_sample_seen)
		return false;
	r->iters = w->n_stop - w->n_sample;
	r->seconds = (double)(w->t_stop_seen - w->t_sample_seen) / 1e9;
	/* single process: both sides' threads, per message of this side */
	if (r->iters && w->cpu_stop > w->cpu_sample)
		r->cpu_ns_msg = (double)(w->cpu_stop - w->cpu_sample) / (double)r->iters;
	return true;
}

static void pt_result_common(const struct pt_side *s, struct pt_result *r)
{
	memset(r, 0, sizeof(*r));
	r->size = s->size;
	r->verify_checked = s->verify_checked;
	r->verify_errors = s->verify_errors;
	r->lost = s->lost;
}

void pt_report_bw_side(const struct pt_side *s, struct pt_result *r)
{
	double unit = pt_bw_unit(s->p->report_gbits);
	bool receiver = s->role == PT_ROLE_SERVER && s->mode->verb == PT_SEND;

	pt_result_common(s, r);
	if (s->role != PT_ROLE_CLIENT && !receiver)
		return;         /* a passive target measures nothing */
	r->valid = true;
	if (s->p->duration) {
		if (pt_window_result(s, r)) {
			r->bw_avg = (double)s->size * (double)r->iters / r->seconds / unit;
			r->msg_rate = (double)r->iters / r->seconds / 1e6;
		}
	} else if (receiver) {
		/* perftest's server has no peak either */
		r->iters = s->n_received;
		if (s->t_last_rx > s->t_begin) {
			r->seconds = (double)(s->t_last_rx - s->t_begin) / 1e9;
			r->bw_avg = (double)s->size * (double)r->iters / r->seconds / unit;
			r->msg_rate = (double)r->iters / r->seconds / 1e6;
		}
	} else {
		pt_bw_compute(s->tposted, s->tcompleted, s->n_completed < s->ts_cap ? s->n_completed : s->ts_cap,
			      s->size, s->cq_mod, s->p->no_peak, s->p->report_gbits, r);
	}
	r->verify_checked = s->verify_checked;
	r->verify_errors = s->verify_errors;
	r->lost = s->lost;
}

/* -D latency: round trips in the window. */
static void pt_report_lat_window(const struct pt_side *s, unsigned int rtt_factor, struct pt_result *r)
{
	r->lat = true;
	if (pt_window_result(s, r) && r->iters) {
		r->t_avg = r->seconds * 1e6 / (double)r->iters / rtt_factor;
		r->tps = (double)r->iters / r->seconds;
	}
}

void pt_report_pingpong(const struct pt_side *s, struct pt_result *r)
{
	uint64_t n = s->n_posted < s->ts_cap ? s->n_posted : s->ts_cap, *d;

	pt_result_common(s, r);
	r->lat = true;
	if (s->role != PT_ROLE_CLIENT)
		return;
	r->valid = true;
	if (s->p->duration) {
		pt_report_lat_window(s, 2, r);
		return;
	}
	r->iters = s->n_posted;
	if (n < 2 || !(d = malloc((n - 1) * sizeof(*d))))
		return;
	r->seconds = (double)(s->tposted[n - 1] - s->tposted[0]) / 1e9;
	for (uint64_t i = 0; i + 1 < n; i++)
		d[i] = s->tposted[i + 1] - s->tposted[i];
	pt_lat_compute(d, n - 1, 2, r);
	free(d);
}

void pt_report_rtt(const struct pt_side *s, struct pt_result *r)
{
	uint64_t n = s->n_completed < s->ts_cap ? s->n_completed : s->ts_cap, *d;

	pt_result_common(s, r);
	r->lat = true;
	if (s->role != PT_ROLE_CLIENT) {
		r->valid = false;
		return;
	}
	r->valid = true;
	if (s->p->duration) {
		pt_report_lat_window(s, 1, r);
		return;
	}
	r->iters = s->n_completed;
	if (n < 1 || !(d = malloc(n * sizeof(*d))))
		return;
	r->seconds = (double)(s->tcompleted[n - 1] - s->tposted[0]) / 1e9;
	for (uint64_t i = 0; i < n; i++)
		d[i] = s->tcompleted[i] - s->tposted[i];
	pt_lat_compute(d, n, 1, r);
	free(d);
}

/* ---- table ----------------------------------------------------------------- */

void pt_print_rule(FILE *f)
{
	fputs(PT_RESULT_LINE, f);
}

void pt_print_header(FILE *f, const struct pt_params *p, const struct pt_info *in)
{
	const struct pt_mode *m = p->mode;
	bool sender = in->single || in->role == PT_ROLE_CLIENT;
	bool receiver = in->single || in->role == PT_ROLE_SERVER;

	fputs(PT_RESULT_LINE, f);
	fprintf(f, "                    %s ", m->title);
	if (m->verb == PT_ATOMIC)
		fprintf(f, "%s ", p->atomic_op == PT_CMP_AND_SWAP ? "CMP_AND_SWAP" : "FETCH_AND_ADD");
	fprintf(f, "%sTest\n", m->kind == PT_BW ? "BW " : "Latency ");
	fprintf(f, " Dual-port       : OFF\t\tDevice         : %s\n", in->device);
	fprintf(f, " Number of qps   : %d\t\tTransport type : IB\n", p->num_qps);
	fprintf(f, " Connection type : %s\t\tUsing SRQ      : OFF\n", pt_conn_name(p->conn));
	fprintf(f, " ibv_wr* API     : OFF\n");
	if (sender)
		fprintf(f, " TX depth        : %d\n", in->tx_depth);
	if (pt_uses_recv(p) && receiver)
		fprintf(f, " RX depth        : %d\n", in->rx_depth);
	if (m->kind == PT_BW)
		fprintf(f, " CQ Moderation   : %d\n", in->cq_mod);
	fprintf(f, " Mtu             : %d[B]\n", in->mtu);
	fprintf(f, " Link type       : %s\n", pt_link_layer_name(in->link_layer));
	if (in->gid_index >= 0)
		fprintf(f, " GID index       : %d\n", in->gid_index);
	if (m->verb != PT_READ && m->verb != PT_ATOMIC)
		fprintf(f, " Max inline data : %d[B]\n", in->inline_size);
	else
		fprintf(f, " Outstand reads  : %d\n", in->out_reads);
	fprintf(f, " rdma_cm QPs\t : OFF\n");
	fprintf(f, " Data ex. method : %s\n", in->single ? "Single process" : "Ethernet");
	if (in->single)
		fprintf(f, " Peer device     : %s\n", in->peer_device);
	if (p->verify)
		fprintf(f, " Data verify     : ON\n");
	if (m->kind == PT_BW && p->no_peak && (p->duration || p->iters > PT_PEAK_MAX_ITERS))
		fprintf(f, " WARNING: BW peak won't be measured in this run.\n");
	fputs(PT_RESULT_LINE, f);
}

void pt_print_dest(FILE *f, const struct pt_params *p, const char *side, const struct pt_dest *d,
		   bool show_gid)
{
	const uint8_t *g = d->gid.raw;

	fprintf(f, " %s address: LID %#04x QPN %#06x PSN %#06x", side, d->lid, d->qpn, d->psn);
	if (p->mode->verb == PT_READ)
		fprintf(f, " OUT %#04x", d->out_reads);
	if (p->mode->verb == PT_READ || p->mode->verb == PT_WRITE)
		fprintf(f, " RKey %#08x VAddr %#016" PRIx64, d->rkey, d->vaddr);
	fputc('\n', f);
	if (show_gid)
		fprintf(f, " GID: %02d:%02d:%02d:%02d:%02d:%02d:%02d:%02d:%02d:%02d:%02d:%02d:%02d:%02d:%02d:%02d\n",
			g[0], g[1], g[2], g[3], g[4], g[5], g[6], g[7],
			g[8], g[9], g[10], g[11], g[12], g[13], g[14], g[15]);
}

void pt_print_table_head(FILE *f, const struct pt_params *p)
{
	fputs(PT_RESULT_LINE, f);
	if (p->mode->kind == PT_LAT)
		fputs(p->duration ? PT_FMT_LAT_DUR : PT_FMT_LAT, f);
	else
		fputs(p->report_gbits ? PT_FMT_BW_G : PT_FMT_BW, f);
}

void pt_print_result(FILE *f, const struct pt_params *p, const struct pt_result *r)
{
	if (p->mode->kind == PT_LAT) {
		if (p->duration)
			fprintf(f, PT_ROW_LAT_DUR, r->size, r->iters, r->t_avg, r->tps);
		else
			fprintf(f, PT_ROW_LAT, r->size, r->iters, r->t_min, r->t_max, r->t_typical,
				r->t_avg, r->t_stdev, r->t_p99, r->t_p999);
		return;
	}
	/* perftest prints small Gb/s figures with more digits */
	fprintf(f, p->report_gbits && r->bw_avg < 0.1 ? PT_ROW_BW_EXT : PT_ROW_BW,
		r->size, r->iters, r->bw_peak, r->bw_avg, r->msg_rate);
}

const char *pt_verify_word(const struct pt_params *p, const struct pt_result *r)
{
	if (!p->verify)
		return "off";
	return r->verify_errors || !r->verify_checked ? "failed" : "ok";
}

/* ---- CSV and JSON -------------------------------------------------------- */

static const char *pt_role_word(const struct pt_info *in)
{
	return in->single ? "single" : in->role == PT_ROLE_CLIENT ? "client" : "server";
}

void pt_csv_head(FILE *f)
{
	fputs("test,connection,role,device,size,iterations,qps,seconds,bw_peak,bw_avg,bw_unit,"
	      "msg_rate_mpps,t_min_us,t_max_us,t_typical_us,t_avg_us,t_stdev_us,t_p99_us,t_p999_us,"
	      "tps,verify,verify_checked,verify_errors,lost,cpu_ns_per_msg\n", f);
}

void pt_csv_row(FILE *f, const struct pt_params *p, const struct pt_info *in, const struct pt_result *r)
{
	fprintf(f, "%s,%s,%s,%s,%" PRIu64 ",%" PRIu64 ",%d,%.6f,", p->mode->name, pt_conn_name(p->conn),
		pt_role_word(in), in->device, r->size, r->iters, p->num_qps, r->seconds);
	if (p->mode->kind == PT_BW)
		fprintf(f, "%.6f,%.6f,%s,%.6f,,,,,,,,,", r->bw_peak, r->bw_avg,
			p->report_gbits ? "Gb/sec" : "MiB/sec", r->msg_rate);
	else if (p->duration)
		fprintf(f, ",,,,,,,%.3f,,,,%.3f,", r->t_avg, r->tps);
	else
		fprintf(f, ",,,,%.3f,%.3f,%.3f,%.3f,%.3f,%.3f,%.3f,,", r->t_min, r->t_max, r->t_typical,
			r->t_avg, r->t_stdev, r->t_p99, r->t_p999);
	fprintf(f, "%s,%" PRIu64 ",%" PRIu64 ",%" PRIu64 ",", pt_verify_word(p, r),
		r->verify_checked, r->verify_errors, r->lost);
	if (r->cpu_ns_msg > 0)
		fprintf(f, "%.1f", r->cpu_ns_msg);
	fputc('\n', f);
}

/* Device names come from the kernel and test names from our table: neither
 * needs escaping beyond quotes and backslashes, which we still handle. */
static void pt_json_str(FILE *f, const char *s)
{
	fputc('"', f);
	for (; s && *s; s++) {
		if (*s == '"' || *s == '\\')
			fputc('\\', f);
		if ((unsigned char)*s >= 0x20)
			fputc(*s, f);
	}
	fputc('"', f);
}

void pt_json_write(FILE *f, const struct pt_params *p, const struct pt_info *in,
		   const struct pt_result *rows, size_t n)
{
	const struct pt_mode *m = p->mode;

	fputs("{\n  \"test_info\": {\n    \"test\": ", f);
	pt_json_str(f, m->name);
	fprintf(f, ",\n    \"title\": \"%s%s%s Test\",\n", m->title,
		m->verb != PT_ATOMIC ? "" : p->atomic_op == PT_CMP_AND_SWAP ? " CMP_AND_SWAP" : " FETCH_AND_ADD",
		m->kind == PT_BW ? " BW" : " Latency");
	fputs("    \"role\": ", f);
	pt_json_str(f, pt_role_word(in));
	fputs(",\n    \"device\": ", f);
	pt_json_str(f, in->device);
	if (in->single) {
		fputs(",\n    \"peer_device\": ", f);
		pt_json_str(f, in->peer_device);
	}
	fprintf(f, ",\n    \"connection\": \"%s\",\n    \"qps\": %d,\n    \"mtu\": %d,\n"
		"    \"link_type\": \"%s\",\n    \"gid_index\": %d,\n    \"tx_depth\": %d,\n"
		"    \"rx_depth\": %d,\n    \"cq_mod\": %d,\n    \"duration\": %d,\n"
		"    \"verify\": %s,\n    \"bw_unit\": \"%s\"\n  },\n  \"results\": [",
		pt_conn_name(p->conn), p->num_qps, in->mtu, pt_link_layer_name(in->link_layer),
		in->gid_index, in->tx_depth, in->rx_depth, in->cq_mod, p->duration,
		p->verify ? "true" : "false", p->report_gbits ? "Gb/sec" : "MiB/sec");
	for (size_t i = 0; i < n; i++) {
		const struct pt_result *r = &rows[i];

		fprintf(f, "%s\n    {\"size\": %" PRIu64 ", \"iterations\": %" PRIu64 ", \"seconds\": %.6f",
			i ? "," : "", r->size, r->iters, r->seconds);
		if (m->kind == PT_BW)
			fprintf(f, ", \"bw_peak\": %.6f, \"bw_avg\": %.6f, \"msg_rate_mpps\": %.6f",
				r->bw_peak, r->bw_avg, r->msg_rate);
		else if (p->duration)
			fprintf(f, ", \"t_avg_us\": %.3f, \"tps\": %.3f", r->t_avg, r->tps);
		else
			fprintf(f, ", \"t_min_us\": %.3f, \"t_max_us\": %.3f, \"t_typical_us\": %.3f,"
				" \"t_avg_us\": %.3f, \"t_stdev_us\": %.3f, \"t_p99_us\": %.3f, \"t_p999_us\": %.3f",
				r->t_min, r->t_max, r->t_typical, r->t_avg, r->t_stdev, r->t_p99, r->t_p999);
		if (r->cpu_ns_msg > 0)
			fprintf(f, ", \"cpu_ns_per_msg\": %.1f", r->cpu_ns_msg);
		fprintf(f, ", \"verify\": \"%s\", \"verify_checked\": %" PRIu64 ", \"verify_errors\": %" PRIu64
			", \"lost\": %" PRIu64 "}", pt_verify_word(p, r), r->verify_checked, r->verify_errors, r->lost);
	}
	fputs("\n  ]\n}\n", f);
}
