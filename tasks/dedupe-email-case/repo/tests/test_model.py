import unittest

from contactsync import Contact


class FromRowTest(unittest.TestCase):
    def test_google_export(self):
        c = Contact.from_row({
            "Given Name": "Ada",
            "Family Name": "Lovelace",
            "E-mail 1 - Value": "ada@example.com",
            "Phone 1 - Value": "+44 20 7946 0000 ::: +44 7700 900000",
            "Organization 1 - Name": "Analytical Engines",
        })
        self.assertEqual(c.name, "Ada Lovelace")
        self.assertEqual(c.email, "ada@example.com")
        self.assertEqual(c.phones, ["+44 20 7946 0000", "+44 7700 900000"])
        self.assertEqual(c.company, "Analytical Engines")

    def test_crm_export(self):
        c = Contact.from_row({"Name": "Grace Hopper", "Email": "grace@navy.example", "Mobile": "555-0100"})
        self.assertEqual(c.to_row(), {
            "Name": "Grace Hopper",
            "Email": "grace@navy.example",
            "Company": "",
            "Phone": "555-0100",
        })
