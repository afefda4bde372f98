"""Writes multilingual.jsonl: meetings in eight languages, one that switches language.

The corpus is hand-written for the tests (not translated from any dataset); run
``python tests/data/make_multilingual.py`` to regenerate the JSON Lines file.
"""

from __future__ import annotations

import json
from pathlib import Path

MEETINGS = [
    ("de-office", "Büroumzug Planung", "2026-05-04T08:30:00Z", "de", [
        ("Jürgen", "Guten Morgen. Heute geht es um den Umzug des Büros in München."),
        ("Anja", "Die Kündigungsfrist für den alten Mietvertrag beträgt drei Monate, "
                 "also müssen wir bis Ende Juni kündigen."),
        ("Jürgen", "Und die neue Küche im dritten Stock? Die Schreinerei braucht sechs Wochen."),
        ("Anja", "Ich kläre die Überprüfung der Brandschutzauflagen mit der Hausverwaltung."),
        ("Jürgen", "Gut, dann treffen wir uns nächste Woche wieder."),
    ], "## Zusammenfassung\nKündigungsfrist drei Monate; Küche im dritten Stock dauert sechs "
       "Wochen; Anja prüft den Brandschutz."),
    ("fr-launch", "Lancement produit", "2026-05-11T13:00:00Z", "fr", [
        ("Céline", "Bonjour à tous. L'échéance du lancement est fixée au quinze septembre."),
        ("Étienne", "Le café de l'équipe marketing a préparé le résumé de la campagne."),
        ("Céline", "Il faut une réunion avec le fournisseur pour l'emballage écologique."),
        ("Étienne", "D'accord, je m'occupe du fournisseur et du calendrier."),
    ], "## Résumé\nÉchéance le 15 septembre; Étienne contacte le fournisseur d'emballage."),
    ("es-hiring", "Contratación del equipo", "2026-05-18T16:00:00Z", "es", [
        ("Lucía", "Necesitamos contratar dos ingenieros antes de diciembre."),
        ("Andrés", "La entrevista técnica dura una hora y media; es demasiado larga."),
        ("Lucía", "Propongo reducirla y añadir una prueba práctica en casa."),
        ("Andrés", "Bien, preparo la oferta salarial para la próxima semana."),
    ], "## Resumen\nDos contrataciones antes de diciembre; entrevista más corta."),
    ("pt-logistics", "Logística do armazém", "2026-05-25T12:00:00Z", "pt", [
        ("João", "O armazém de Lisboa está sem espaço para o estoque de inverno."),
        ("Conceição", "A transportadora aumentou o preço do frete em doze por cento."),
        ("João", "Então vamos negociar um contrato anual com a transportadora."),
    ], "## Resumo\nArmazém cheio; frete mais caro; negociar contrato anual."),
    ("ja-budget", "予算会議", "2026-06-01T01:00:00Z", "ja", [
        ("佐藤", "おはようございます。今日は来期の予算について話し合います。"),
        ("鈴木", "会議室の改装費用が予定より高くなりました。"),
        ("佐藤", "では、広告費を削減して調整しましょう。"),
        ("鈴木", "承知しました。来週までに見積もりを送ります。"),
    ], "## 要約\n来期の予算、会議室の改装費用、広告費の削減。"),
    ("zh-sales", "季度销售回顾", "2026-06-08T02:00:00Z", "zh", [
        ("王芳", "大家好，我们来回顾一下第三季度的销售情况。"),
        ("李明", "华东地区的销售额增长了百分之十五，但是物流成本也上升了。"),
        ("王芳", "明年的预算需要考虑新仓库的租金。"),
        ("李明", "好的，我下周提交详细的报告。"),
    ], "## 摘要\n第三季度销售增长，物流成本上升，明年预算包括仓库租金。"),
    ("ko-design", "디자인 검토 회의", "2026-06-15T05:00:00Z", "ko", [
        ("김민준", "안녕하세요. 오늘은 새 앱의 디자인을 검토하겠습니다."),
        ("이서연", "로그인 화면의 버튼 색상이 너무 어둡다는 의견이 있었습니다."),
        ("김민준", "예산 안에서 사용자 테스트를 한 번 더 진행합시다."),
    ], "## 요약\n앱 디자인 검토, 버튼 색상 수정, 사용자 테스트 추가."),
    ("mixed-standup", "Standup / reunión semanal", "2026-06-22T15:00:00Z", "en+es", [
        ("Priya", "Quick standup today. The mobile release is blocked on the payment SDK."),
        ("Diego", "Sí, el proveedor de pagos todavía no ha enviado la documentación."),
        ("Priya", "Can you escalate that to their account manager?"),
        ("Diego", "Claro, hoy mismo le escribo al gerente de cuenta."),
    ], "## Summary\nRelease blocked on the payment SDK; Diego escalates to the provider."),
]


def record(file_id: str, name: str, created: str, lang: str,
           lines: list[tuple[str, str]], note: str) -> dict[str, object]:
    transcript, start = [], 0.0
    for speaker, text in lines:
        end = start + max(len(text) / 12, 2.0)
        transcript.append({"speaker": speaker, "start": round(start, 1), "end": round(end, 1),
                           "text": text})
        start = end + 0.5
    return {"id": f"ml-{file_id}", "name": name, "created_at": created,
            "duration": round(start), "transcript": transcript, "note": note,
            "meta": {"language": lang}}


if __name__ == "__main__":
    out = Path(__file__).with_name("multilingual.jsonl")
    with out.open("w", encoding="utf-8") as fh:
        for meeting in MEETINGS:
            fh.write(json.dumps(record(*meeting), ensure_ascii=False) + "\n")
    print(f"wrote {out}")
